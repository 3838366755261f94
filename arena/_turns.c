/* The arena's common engine turn in one compiled callback (optional: arena/turns.py falls back to Python).
 *
 * A Reader is what the event loop calls when an engine process's output is readable (loop.add_reader). Without a
 * game's fast path armed for its side, it calls the transport's own _on_readable: today's path. Armed, it reads
 * the chunk itself, and when the chunk is exactly one `turn TOKEN` line (canonical token), the search is running
 * with no score reported, the turn is legal and does not bring the game to adjudication, it does in one call what
 * the Python path does in about a hundred and twenty: records the answer's time on the session's clock, the turn in
 * the game (position, position line, turns, TurnRecord), and starts the other engine's search (its go line, the
 * write, its deadline), or, when the turn wins (automatic claims) or fills the board, ends the turns as _Game._ask
 * does. Everything else, decided before any state is changed, is handed to the
 * Python path (the transport's _feed / _at_eof with the chunk read), which stays the one reference for the rules
 * and the records: the Python path's state and the C one's are the same fields.
 *
 * The contract: every Python object's state read or written here is a slot of one of arena/turns.py's slotted
 * classes (GameSlots, SessionSlots, SearchSlots, PipeSlots, ClockSlots), reached at the offset setup() found for
 * it, never by name; setup() holds this file's list of them (PARTIES below), of the methods called (CALLS) and of
 * the values' layouts (Position, TurnRecord, Turn) to the declaration there, and refuses to load when they differ.
 *
 * Bounded: one read of at most CHUNK bytes into a fixed buffer; lines to write are built in a fixed buffer (a
 * longer one goes through Python). Reads and writes are non-blocking (the pipes are O_NONBLOCK), so the GIL is never
 * held across a blocking call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define OUT_MAX 4096
#define MAX_GROUPS 16
#define MAX_WIDES 4

/* --- the contract (arena/turns.py) -------------------------------------------------------------------------- */

#define MAX_SLOTS 9
#define MAX_CALLS 4

/* A slotted class of arena/turns.py: the slots read and written here (in any order: each is found by its name)
 * and its CALLS. */
typedef struct {
    const char *name;
    const char *slots[MAX_SLOTS];
    int nslots;
    const char *calls[MAX_CALLS];
    int ncalls;
    PyTypeObject *type;         /* set by setup() */
    Py_ssize_t at[MAX_SLOTS];   /* each slot's offset in an object of the type */
    PyObject *call[MAX_CALLS];  /* interned method names */
} Party;

enum { GAME, SESSION, SEARCH, PIPE, CLOCK, PARTIES };
enum { G_POSITION, G_POSITION_LINE, G_TURNS, G_RECORDS, G_SIDE, G_STOP, G_N };
enum { S_TRANSPORT, S_EXCHANGE, S_SEARCH, S_CLOCK, S_THEN, S_WAITER, S_ABANDONED, S_N };
enum { S_SEARCH_SOON, S_RESEND };
enum { Q_POSITION, Q_GO, Q_SCORE, Q_TURN, Q_N };
enum { T_LAST_LINE, T_RECEIVED_AT, T_ENDED, T_RETURNCODE, T_CLOSING, T_IN, T_BUF, T_SKIP, T_PENDING, T_N };
enum { T_FEED, T_AT_EOF, T_ON_READABLE, T_FLUSH };
enum { K_SENT_AT, K_SECONDS, K_AT, K_ANSWERED_AT, K_RUNNING, K_HANDLE, K_WHEN, K_N };
enum { K_FIRE };

static Party P[PARTIES] = {
    {"GameSlots", {"position", "position_line", "turns", "records", "_side", "_stop"}, G_N, {NULL}, 0},
    {"SessionSlots", {"_transport", "_exchange", "_search", "_clock", "_then", "_waiter", "_abandoned"}, S_N,
     {"search_soon", "_resend"}, 2},
    {"SearchSlots", {"position", "go", "score", "turn"}, Q_N, {NULL}, 0},
    {"PipeSlots",
     {"last_line", "received_at", "_ended", "returncode", "_closing", "_in", "_buf", "_skip", "_pending"}, T_N,
     {"_feed", "_at_eof", "_on_readable", "_flush"}, 4},
    {"ClockSlots", {"sent_at", "seconds", "at", "answered_at", "_running", "_handle", "_when"}, K_N, {"_fire"}, 1},
};

/* The methods called on the other objects a path is given (turns.CALLS). */
typedef struct {
    const char *name;
    const char *calls[MAX_CALLS];
    int ncalls;
    PyObject *call[MAX_CALLS];
} Calls;

enum { CLK, LOOP, FUTURE, TIMER, OTHERS };
enum { CLK_CHARGE, CLK_GO_LINE, CLK_DEADLINE };
enum { LOOP_TIME, LOOP_CALL_AT, LOOP_ADD_WRITER };
enum { FUT_DONE, FUT_SET_RESULT, FUT_SET_EXCEPTION };
enum { TIMER_CANCEL };

static Calls O[OTHERS] = {
    {"Clock", {"charge", "go_line", "deadline"}, 3},
    {"loop", {"time", "call_at", "add_writer"}, 3},
    {"future", {"done", "set_result", "set_exception"}, 3},
    {"timer", {"cancel"}, 1},
};

/* The values read and made (turns.VALUES): Position's fields, TurnRecord's and Turn's slots. */
enum { V_POSITION, V_RECORD, V_TURN, V_N };
static const char *const VALUE_NAMES[V_N] = {"Position", "TurnRecord", "Turn"};
static const char *const POSITION_FIELDS[] = {"variant", "occupied", "planes", "held", "available", "claimable",
                                              "outcome"};
static const char *const RECORD_SLOTS[] = {"token", "ms", "score"};
static const char *const TURN_SLOTS[] = {"token"};
static const char *const *const VALUE_SLOTS[V_N] = {POSITION_FIELDS, RECORD_SLOTS, TURN_SLOTS};
static const int VALUE_COUNTS[V_N] = {7, 3, 1};
enum { POS_VARIANT, POS_OCCUPIED, POS_PLANES, POS_HELD, POS_AVAILABLE, POS_CLAIMABLE, POS_OUTCOME, POS_N };

static PyTypeObject *PositionType, *RecordType, *TurnType;
static Py_ssize_t record_at[3], turn_token_at;
static PyObject *TURNS;                /* TURNS[square][piece], 17 x 17 */
static PyObject *ONGOING, *WIN, *DRAW; /* Outcome's members */
static PyObject *SIDE0, *SIDE1;
static PyObject *clock_fn; /* turns.use_clock's clock, NULL: CLOCK_MONOTONIC */

static int ready; /* setup() succeeded */

/* Slot `i` of an object of party `p` (borrowed), or NULL with AttributeError while it is unset. */
static PyObject *get(PyObject *o, int p, int i) {
    PyObject *v = *(PyObject **)((char *)o + P[p].at[i]);
    if (v == NULL) PyErr_Format(PyExc_AttributeError, "%s.%s is not set", P[p].name, P[p].slots[i]);
    return v;
}

/* Sets slot `i` of an object of party `p` to `v` (a new reference taken). */
static void put(PyObject *o, int p, int i, PyObject *v) {
    PyObject **slot = (PyObject **)((char *)o + P[p].at[i]), *old = *slot;
    Py_INCREF(v);
    *slot = v;
    Py_XDECREF(old);
}

static int put_double(PyObject *o, int p, int i, double v) {
    PyObject *f = PyFloat_FromDouble(v);
    if (f == NULL) return -1;
    put(o, p, i, f);
    Py_DECREF(f);
    return 0;
}

static int get_double(PyObject *o, int p, int i, double *out) {
    PyObject *v = get(o, p, i);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* 1 when slot `i` is `expected`, 0 when not, -1 when unset. */
static int slot_is(PyObject *o, int p, int i, PyObject *expected) {
    PyObject *v = get(o, p, i);
    return v == NULL ? -1 : v == expected;
}

/* --- the rules of a variant, for the win test --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    int strict; /* claims must be called: a placement that completes an alignment uncalled goes the Python way */
    int n[16];
    uint64_t mask[16][MAX_GROUPS];
    int nw[16][MAX_GROUPS];
    uint64_t wide[16][MAX_GROUPS][MAX_WIDES];
} Rules;

static int rules_init(Rules *self, PyObject *args, PyObject *kw) {
    PyObject *through;
    int strict;
    if (!PyArg_ParseTuple(args, "O!p", &PyTuple_Type, &through, &strict)) return -1;
    if (PyTuple_GET_SIZE(through) != 16) {
        PyErr_SetString(PyExc_ValueError, "through needs 16 squares");
        return -1;
    }
    for (int s = 0; s < 16; s++) {
        PyObject *groups = PyTuple_GET_ITEM(through, s);
        if (!PyTuple_Check(groups) || PyTuple_GET_SIZE(groups) > MAX_GROUPS) goto bad;
        self->n[s] = (int)PyTuple_GET_SIZE(groups);
        for (int g = 0; g < self->n[s]; g++) {
            PyObject *pair = PyTuple_GET_ITEM(groups, g);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) goto bad;
            PyObject *wides = PyTuple_GET_ITEM(pair, 1);
            if (!PyTuple_Check(wides) || PyTuple_GET_SIZE(wides) > MAX_WIDES) goto bad;
            self->mask[s][g] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(pair, 0));
            if (PyErr_Occurred()) return -1;
            self->nw[s][g] = (int)PyTuple_GET_SIZE(wides);
            for (int w = 0; w < self->nw[s][g]; w++) {
                self->wide[s][g][w] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(wides, w));
                if (PyErr_Occurred()) return -1;
            }
        }
    }
    self->strict = strict;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "through: a tuple of (mask, wides) pairs per square");
    return -1;
}

static PyTypeObject RulesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quarto_arena.arena._turns.Rules",
    .tp_basicsize = sizeof(Rules),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)rules_init,
    .tp_doc = "Rules(variant.through, variant.strict): a variant's winning groups through each square, for the win "
              "test.",
};

static int completes(const Rules *r, int square, uint64_t occupied, uint64_t planes) {
    for (int g = 0; g < r->n[square]; g++) {
        uint64_t m = r->mask[square][g];
        if ((occupied & m) == m) {
            for (int w = 0; w < r->nw[square][g]; w++) {
                uint64_t wide = r->wide[square][g][w], x = planes & wide;
                if (x == 0 || x == wide) return 1;
            }
        }
    }
    return 0;
}

static uint64_t piece_planes(int piece, int square) {
    uint64_t p = 0;
    for (int a = 0; a < 4; a++)
        if (piece >> a & 1) p |= (uint64_t)1 << (16 * a + square);
    return p;
}

/* --- a game's fast path -------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *game, *session[2], *transport[2], *loop, *answered, *clock[2], *go[2], *deadline[2], *safety[2];
    PyObject *variant; /* the game's: its positions hold it */
    Rules *rules;
    int in_fd[2];
    int adjudicate; /* -1: none */
    int timed;      /* a game clock: charge, go line and deadline asked of the Clocks each turn */
    int armed[2];
    long fast_turns, handed_over;
} Path;

static int path_traverse(Path *self, visitproc visit, void *arg) {
    Py_VISIT(self->game);
    Py_VISIT(self->loop);
    Py_VISIT(self->answered);
    Py_VISIT(self->rules);
    Py_VISIT(self->variant);
    for (int i = 0; i < 2; i++) {
        Py_VISIT(self->session[i]);
        Py_VISIT(self->transport[i]);
        Py_VISIT(self->clock[i]);
        Py_VISIT(self->go[i]);
        Py_VISIT(self->deadline[i]);
        Py_VISIT(self->safety[i]);
    }
    return 0;
}

static int path_clear(Path *self) {
    Py_CLEAR(self->game);
    Py_CLEAR(self->loop);
    Py_CLEAR(self->answered);
    Py_CLEAR(self->rules);
    Py_CLEAR(self->variant);
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(self->session[i]);
        Py_CLEAR(self->transport[i]);
        Py_CLEAR(self->clock[i]);
        Py_CLEAR(self->go[i]);
        Py_CLEAR(self->deadline[i]);
        Py_CLEAR(self->safety[i]);
    }
    return 0;
}

static void path_dealloc(Path *self) {
    PyObject_GC_UnTrack(self);
    path_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Raises TypeError unless `o` is an object of party `p`'s class (or of a subclass). */
static int check_party(PyObject *o, int p) {
    if (PyObject_TypeCheck(o, P[p].type)) return 0;
    PyErr_Format(PyExc_TypeError, "the compiled turn path needs a %s (arena/turns.py), not %s", P[p].name,
                 Py_TYPE(o)->tp_name);
    return -1;
}

static int path_init(Path *self, PyObject *args, PyObject *kw) {
    PyObject *game, *variant, *sessions, *transports, *rules, *loop, *answered, *clocks, *gos, *deadlines, *safeties, *in_fds;
    int adjudicate;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_turns.setup() has not run (arena/turns.py runs it)");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOO!O!O!OOO!OOO!O!i", &game, &variant, &PyTuple_Type, &sessions, &PyTuple_Type, &transports,
                          &RulesType, &rules, &loop, &answered, &PyTuple_Type, &clocks, &gos, &deadlines,
                          &PyTuple_Type, &safeties, &PyTuple_Type, &in_fds, &adjudicate))
        return -1;
    if (PyTuple_GET_SIZE(sessions) != 2 || PyTuple_GET_SIZE(transports) != 2 || PyTuple_GET_SIZE(clocks) != 2 ||
        PyTuple_GET_SIZE(safeties) != 2 || PyTuple_GET_SIZE(in_fds) != 2) {
        PyErr_SetString(PyExc_ValueError, "a fast path has two sides");
        return -1;
    }
    if (check_party(game, GAME) < 0) return -1;
    for (int i = 0; i < 2; i++)
        if (check_party(PyTuple_GET_ITEM(sessions, i), SESSION) < 0 ||
            check_party(PyTuple_GET_ITEM(transports, i), PIPE) < 0)
            return -1;
    int timed = gos == Py_None;
    if (!timed && !(PyTuple_Check(gos) && PyTuple_GET_SIZE(gos) == 2 && PyTuple_Check(deadlines) &&
                    PyTuple_GET_SIZE(deadlines) == 2)) {
        PyErr_SetString(PyExc_ValueError, "go lines and deadlines: two of each, or None");
        return -1;
    }
    path_clear(self);
#define TAKE(field, value) do { Py_INCREF(value); self->field = value; } while (0)
    TAKE(game, game);
    TAKE(loop, loop);
    TAKE(answered, answered);
    TAKE(variant, variant);
    Py_INCREF(rules);
    self->rules = (Rules *)rules;
    for (int i = 0; i < 2; i++) {
        TAKE(session[i], PyTuple_GET_ITEM(sessions, i));
        TAKE(transport[i], PyTuple_GET_ITEM(transports, i));
        TAKE(clock[i], PyTuple_GET_ITEM(clocks, i));
        TAKE(safety[i], PyTuple_GET_ITEM(safeties, i));
        if (!timed) {
            TAKE(go[i], PyTuple_GET_ITEM(gos, i));
            TAKE(deadline[i], PyTuple_GET_ITEM(deadlines, i));
            if (!PyUnicode_Check(self->go[i]) || !PyFloat_Check(self->deadline[i])) {
                PyErr_SetString(PyExc_TypeError, "go lines are str and deadlines float");
                return -1;
            }
        }
        self->in_fd[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(in_fds, i));
        if (self->in_fd[i] == -1 && PyErr_Occurred()) return -1;
    }
#undef TAKE
    self->timed = timed;
    self->adjudicate = adjudicate;
    self->armed[0] = self->armed[1] = 0;
    return 0;
}

static PyObject *path_arm(Path *self, PyObject *arg) {
    long side = PyLong_AsLong(arg);
    if (side == -1 && PyErr_Occurred()) return NULL;
    if (side != 0 && side != 1) {
        PyErr_SetString(PyExc_ValueError, "side 0 or 1");
        return NULL;
    }
    self->armed[side] = 1;
    Py_RETURN_NONE;
}

static PyObject *path_disarm(Path *self, PyObject *unused) {
    self->armed[0] = self->armed[1] = 0;
    Py_RETURN_NONE;
}

static PyMethodDef path_methods[] = {
    {"arm", (PyCFunction)path_arm, METH_O, "arm(side): the search just sent to side may be answered in C."},
    {"disarm", (PyCFunction)path_disarm, METH_NOARGS, "No side's answer is taken in C any more."},
    {NULL},
};

static PyMemberDef path_members[] = {
    {"fast_turns", T_LONG, offsetof(Path, fast_turns), READONLY, "turns taken by the compiled path"},
    {"handed_over", T_LONG, offsetof(Path, handed_over), READONLY, "armed reads handed to the Python path"},
    {NULL},
};

static PyTypeObject PathType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quarto_arena.arena._turns.Path",
    .tp_basicsize = sizeof(Path),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)path_init,
    .tp_dealloc = (destructor)path_dealloc,
    .tp_traverse = (traverseproc)path_traverse,
    .tp_clear = (inquiry)path_clear,
    .tp_methods = path_methods,
    .tp_members = path_members,
    .tp_doc = "One game's compiled turn path (see arena/turns.py).",
};

/* --- the reader ---------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *transport;
    Path *path; /* NULL: today's path */
    int fd, side;
} Reader;

static int reader_traverse(Reader *self, visitproc visit, void *arg) {
    Py_VISIT(self->transport);
    Py_VISIT(self->path);
    return 0;
}

static int reader_clear(Reader *self) {
    Py_CLEAR(self->transport);
    Py_CLEAR(self->path);
    return 0;
}

static void reader_dealloc(Reader *self) {
    PyObject_GC_UnTrack(self);
    reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int reader_init(Reader *self, PyObject *args, PyObject *kw) {
    PyObject *transport;
    int fd;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_turns.setup() has not run (arena/turns.py runs it)");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "Oi", &transport, &fd)) return -1;
    if (check_party(transport, PIPE) < 0) return -1;
    Py_INCREF(transport);
    Py_XSETREF(self->transport, transport);
    Py_CLEAR(self->path);
    self->fd = fd;
    self->side = 0;
    return 0;
}

static PyObject *reader_attach(Reader *self, PyObject *args) {
    PyObject *path;
    int side = 0;
    if (!PyArg_ParseTuple(args, "O|i", &path, &side)) return NULL;
    if (path == Py_None) {
        Py_CLEAR(self->path);
        Py_RETURN_NONE;
    }
    if (!PyObject_TypeCheck(path, &PathType) || (side != 0 && side != 1)) {
        PyErr_SetString(PyExc_TypeError, "attach(path, side) or attach(None)");
        return NULL;
    }
    Py_INCREF(path);
    Py_XSETREF(self->path, (Path *)path);
    self->side = side;
    Py_RETURN_NONE;
}

static PyMethodDef reader_methods[] = {
    {"attach", (PyCFunction)reader_attach, METH_VARARGS,
     "attach(path, side): armed reads of this side go through path; attach(None): today's path only."},
    {NULL},
};

/* time.monotonic(), the same double: on Linux, Python reads CLOCK_MONOTONIC too and divides its nanoseconds so
 * (arena/turns.py leaves the compiled path off elsewhere, where its clock may be another one); or the clock of
 * turns.use_clock. -1 with an error set when that clock failed. */
static int monotonic(double *now) {
    if (clock_fn != NULL) {
        PyObject *v = PyObject_CallNoArgs(clock_fn);
        if (v == NULL) return -1;
        *now = PyFloat_AsDouble(v);
        Py_DECREF(v);
        return *now == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    *now = (double)ns / 1e9;
    return 0;
}

/* Python's round() of a float to an int (halves to even) */
static long py_round(double x) {
    double r = round(x);
    if (fabs(x - r) == 0.5) r = 2.0 * round(x / 2.0);
    return (long)r;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Hands a chunk read here (`data`, a reference taken over) to the Python path: what _on_readable does after its
 * os.read. */
static PyObject *feed(PyObject *t, PyObject *data, double now) {
    if (put_double(t, PIPE, T_RECEIVED_AT, now) < 0) {
        Py_DECREF(data);
        return NULL;
    }
    PyObject *r = PyObject_CallMethodOneArg(t, P[PIPE].call[T_FEED], data);
    Py_DECREF(data);
    return r;
}

static PyObject *hand_over(PyObject *t, const unsigned char *bytes, Py_ssize_t n, double now) {
    PyObject *data = PyBytes_FromStringAndSize((const char *)bytes, n);
    return data == NULL ? NULL : feed(t, data, now);
}

/* The state checks of a read, before it: the search of `side` runs as search_soon left it, nothing waits in the
 * line buffer. 1: the fast path may take the chunk; 0: not; -1: error. */
static int may_take(Path *p, int side, PyObject *t) {
    PyObject *session = p->session[side];
    PyObject *exchange = get(session, SESSION, S_EXCHANGE);
    if (exchange == NULL) return -1;
    int ok = exchange != Py_None;
    if (ok) ok = slot_is(session, SESSION, S_SEARCH, exchange);
    if (ok != 1) return ok;
    if (!PyObject_TypeCheck(exchange, P[SEARCH].type)) return 0;
    if ((ok = slot_is(exchange, SEARCH, Q_SCORE, Py_None)) != 1) return ok;
    PyObject *clock = get(session, SESSION, S_CLOCK);
    if (clock == NULL) return -1;
    if (!PyObject_TypeCheck(clock, P[CLOCK].type)) return 0;
    PyObject *buf = get(t, PIPE, T_BUF);
    if (buf == NULL) return -1;
    if (!(PyBytes_Check(buf) && PyBytes_GET_SIZE(buf) == 0)) return 0;
    return slot_is(t, PIPE, T_SKIP, Py_False);
}

/* SearchClock.start(seconds), as it does it. */
static int clock_start(Path *p, PyObject *clock, PyObject *seconds_obj) {
    double seconds = PyFloat_AS_DOUBLE(seconds_obj), now;
    if (monotonic(&now) < 0) return -1;
    if (put_double(clock, CLOCK, K_SENT_AT, now) < 0) return -1;
    put(clock, CLOCK, K_SECONDS, seconds_obj);
    if (put_double(clock, CLOCK, K_AT, now + seconds) < 0) return -1;
    put(clock, CLOCK, K_ANSWERED_AT, Py_None);
    put(clock, CLOCK, K_RUNNING, Py_True);
    PyObject *lt = PyObject_CallMethodNoArgs(p->loop, O[LOOP].call[LOOP_TIME]);
    if (lt == NULL) return -1;
    double when = PyFloat_AsDouble(lt);
    Py_DECREF(lt);
    if (when == -1.0 && PyErr_Occurred()) return -1;
    when += seconds;
    PyObject *h = get(clock, CLOCK, K_HANDLE);
    if (h == NULL) return -1;
    if (h != Py_None) {
        double old;
        if (get_double(clock, CLOCK, K_WHEN, &old) < 0) return -1;
        if (old <= when) return 0; /* the pending timer fires first and moves itself on */
        PyObject *r = PyObject_CallMethodNoArgs(h, O[TIMER].call[TIMER_CANCEL]);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    PyObject *fire = PyObject_GetAttr(clock, P[CLOCK].call[K_FIRE]);
    if (fire == NULL) return -1;
    PyObject *wf = PyFloat_FromDouble(when);
    if (wf == NULL) {
        Py_DECREF(fire);
        return -1;
    }
    PyObject *handle = PyObject_CallMethodObjArgs(p->loop, O[LOOP].call[LOOP_CALL_AT], wf, fire, NULL);
    Py_DECREF(fire);
    if (handle == NULL) {
        Py_DECREF(wf);
        return -1;
    }
    put(clock, CLOCK, K_HANDLE, handle);
    put(clock, CLOCK, K_WHEN, wf);
    Py_DECREF(handle);
    Py_DECREF(wf);
    return 0;
}

/* The other side's search, as EngineSession.search_soon does it (today's search_soon where anything is unusual). */
static int next_search(Path *p, int side, PyObject *line, PyObject *go, PyObject *deadline) {
    PyObject *session = p->session[side], *t = p->transport[side];
    PyObject *v = NULL;
    int usual = 1, r = -1;
    Py_ssize_t nl, ng;
    const char *ls = PyUnicode_AsUTF8AndSize(line, &nl);
    const char *gs = ls == NULL ? NULL : PyUnicode_AsUTF8AndSize(go, &ng);
    if (gs == NULL) return -1;
    if (nl + ng + 2 > OUT_MAX) usual = 0;
    /* the transport: the session's, running, nothing pending */
    if (usual && (usual = slot_is(session, SESSION, S_TRANSPORT, t)) < 0) return -1;
    if (usual && (usual = slot_is(t, PIPE, T_ENDED, Py_None)) < 0) return -1;
    if (usual && (usual = slot_is(t, PIPE, T_RETURNCODE, Py_None)) < 0) return -1;
    if (usual && (usual = slot_is(t, PIPE, T_CLOSING, Py_None)) < 0) return -1;
    if (usual) {
        PyObject *pending = get(t, PIPE, T_PENDING), *in = pending == NULL ? NULL : get(t, PIPE, T_IN);
        if (in == NULL) return -1;
        usual = PyBytes_Check(pending) && PyBytes_GET_SIZE(pending) == 0 && PyLong_Check(in) &&
                PyLong_AsLong(in) == p->in_fd[side] && p->in_fd[side] >= 0;
    }
    PyObject *search = NULL, *clock = NULL; /* borrowed: the session holds them */
    if (usual) {
        search = get(session, SESSION, S_SEARCH);
        clock = search == NULL ? NULL : get(session, SESSION, S_CLOCK);
        if (clock == NULL) return -1;
        usual = PyObject_TypeCheck(search, P[SEARCH].type) && PyObject_TypeCheck(clock, P[CLOCK].type);
    }
    if (!usual) {
        v = PyObject_CallMethodObjArgs(session, P[SESSION].call[S_SEARCH_SOON], line, go, deadline, p->answered, NULL);
        r = v == NULL ? -1 : 0;
        goto done;
    }
    put(search, SEARCH, Q_POSITION, line);
    put(search, SEARCH, Q_GO, go);
    put(search, SEARCH, Q_SCORE, Py_None);
    put(search, SEARCH, Q_TURN, Py_None);
    put(session, SESSION, S_EXCHANGE, search);
    put(session, SESSION, S_WAITER, Py_None);
    put(session, SESSION, S_THEN, p->answered);
    put(session, SESSION, S_ABANDONED, Py_None);
    char out[OUT_MAX];
    memcpy(out, ls, nl);
    out[nl] = '\n';
    memcpy(out + nl + 1, gs, ng);
    out[nl + 1 + ng] = '\n';
    Py_ssize_t len = nl + ng + 2, n;
    do {
        n = write(p->in_fd[side], out, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) n = 0;
    if (n < 0) { /* the engine is gone: today's path says so (the write fails again there, and nothing was sent) */
        PyObject *text = PyUnicode_FromStringAndSize(out, len);
        if (text == NULL) goto done;
        v = PyObject_CallMethodObjArgs(session, P[SESSION].call[S_RESEND], text, deadline, NULL);
        Py_DECREF(text);
        r = v == NULL ? -1 : 0;
        goto done;
    }
    if (n < len) { /* what the pipe could not take waits for it, as _write does */
        PyObject *rest = PyBytes_FromStringAndSize(out + n, len - n);
        if (rest == NULL) goto done;
        put(t, PIPE, T_PENDING, rest);
        Py_DECREF(rest);
        PyObject *flush = PyObject_GetAttr(t, P[PIPE].call[T_FLUSH]);
        if (flush == NULL) goto done;
        PyObject *fd = PyLong_FromLong(p->in_fd[side]);
        if (fd == NULL) {
            Py_DECREF(flush);
            goto done;
        }
        v = PyObject_CallMethodObjArgs(p->loop, O[LOOP].call[LOOP_ADD_WRITER], fd, flush, NULL);
        Py_DECREF(fd);
        Py_DECREF(flush);
        if (v == NULL) goto done;
    }
    if (clock_start(p, clock, deadline) < 0) goto done;
    p->armed[side] = 1;
    r = 0;
done:
    Py_XDECREF(v);
    return r;
}

/* A new object of a slotted value class (its slots unset until set). */
static void set_value_slot(PyObject *o, Py_ssize_t offset, PyObject *v) {
    PyObject **slot = (PyObject **)((char *)o + offset);
    Py_INCREF(v);
    Py_XSETREF(*slot, v);
}

/* The game's Python state changed by a turn, now that it is known to be legal and usual. Errors are the arena's
 * own faults: they end the game as _answered's do. */
static int take_turn(Path *p, int side, PyObject *t, double now, const unsigned char *text, Py_ssize_t linelen,
                     PyObject *position, int place, int give, uint64_t occupied, uint64_t planes, long held,
                     long available, PyObject *outcome) {
    PyObject *game = p->game, *session = p->session[side];
    PyObject *line = NULL, *newpos = NULL, *record = NULL, *pos_line = NULL, *go = NULL, *deadline = NULL;
    PyObject *msobj = NULL, *v = NULL;
    int r = -1;
    /* the transport's line, the session's end of the search */
    line = PyUnicode_DecodeASCII((const char *)text, linelen, NULL);
    if (line == NULL) goto done;
    put(t, PIPE, T_LAST_LINE, line);
    put(session, SESSION, S_EXCHANGE, Py_None);
    PyObject *clock = get(session, SESSION, S_CLOCK); /* borrowed; a ClockSlots: may_take checked it */
    if (clock == NULL || put_double(clock, CLOCK, K_ANSWERED_AT, now) < 0) goto done;
    put(clock, CLOCK, K_RUNNING, Py_False);
    put(session, SESSION, S_THEN, Py_None);
    /* SearchClock.answer_ms */
    double at, sent;
    if (get_double(clock, CLOCK, K_AT, &at) < 0 || get_double(clock, CLOCK, K_SENT_AT, &sent) < 0) goto done;
    long ms = py_round(((now < at ? now : at) - sent) * 1000);
    if (ms < 0) ms = 0;
    msobj = PyLong_FromLong(ms);
    if (msobj == NULL) goto done;
    if (p->timed) {
        v = PyObject_CallMethodOneArg(p->clock[side], O[CLK].call[CLK_CHARGE], msobj);
        if (v == NULL) goto done;
        Py_CLEAR(v);
    }
    /* _Game.record: the position after it, the line, the turn and its record (a win recorded as canonical makes it:
     * the placement alone) */
    int recorded = outcome == WIN ? 16 : give;
    PyObject *turn = PyTuple_GET_ITEM(PyTuple_GET_ITEM(TURNS, place < 0 ? 16 : place), recorded); /* borrowed */
    PyObject *token = *(PyObject **)((char *)turn + turn_token_at);                            /* borrowed */
    if (token == NULL) {
        PyErr_SetString(PyExc_AttributeError, "Turn.token is not set");
        goto done;
    }
    newpos = PositionType->tp_alloc(PositionType, POS_N);
    if (newpos == NULL) goto done;
    PyObject *items[POS_N] = {
        PyTuple_GET_ITEM(position, POS_VARIANT), PyLong_FromUnsignedLongLong(occupied),
        PyLong_FromUnsignedLongLong(planes), PyLong_FromLong(held), PyLong_FromLong(available), Py_False, outcome,
    };
    Py_INCREF(items[POS_VARIANT]);
    Py_INCREF(Py_False);
    Py_INCREF(outcome);
    for (int i = 0; i < POS_N; i++) PyTuple_SET_ITEM(newpos, i, items[i]);
    if (items[POS_OCCUPIED] == NULL || items[POS_PLANES] == NULL || items[POS_HELD] == NULL ||
        items[POS_AVAILABLE] == NULL)
        goto done;
    PyObject *turns = get(game, GAME, G_TURNS), *records = turns == NULL ? NULL : get(game, GAME, G_RECORDS);
    PyObject *old_line = records == NULL ? NULL : get(game, GAME, G_POSITION_LINE); /* borrowed, all three */
    if (old_line == NULL) goto done;
    if (!PyList_Check(turns) || !PyList_Check(records)) {
        PyErr_SetString(PyExc_TypeError, "a game's turns and records are lists");
        goto done;
    }
    pos_line = PyUnicode_FromFormat(PyList_GET_SIZE(turns) ? "%U %U" : "%U turns %U", old_line, token);
    record = pos_line == NULL ? NULL : RecordType->tp_alloc(RecordType, 0);
    if (record == NULL) goto done;
    set_value_slot(record, record_at[0], token);
    set_value_slot(record, record_at[1], msobj);
    set_value_slot(record, record_at[2], Py_None);
    put(game, GAME, G_POSITION, newpos);
    put(game, GAME, G_POSITION_LINE, pos_line);
    if (PyList_Append(turns, turn) < 0 || PyList_Append(records, record) < 0) goto done;
    if (outcome != ONGOING) { /* _Game._ask: the game is over, play() goes on */
        PyObject *stop = get(game, GAME, G_STOP); /* borrowed */
        if (stop == NULL) goto done;
        v = PyObject_CallMethodOneArg(stop, O[FUTURE].call[FUT_SET_RESULT], Py_None);
        if (v == NULL) goto done;
        p->fast_turns++;
        r = 0;
        goto done;
    }
    /* _Game._ask: the other player searches */
    int next = (int)(PyList_GET_SIZE(turns) % 2);
    put(game, GAME, G_SIDE, next ? SIDE1 : SIDE0);
    if (p->timed) {
        go = PyObject_CallMethodOneArg(p->clock[next], O[CLK].call[CLK_GO_LINE], p->clock[1 - next]);
        deadline = go == NULL ? NULL
                              : PyObject_CallMethodOneArg(p->clock[next], O[CLK].call[CLK_DEADLINE], p->safety[next]);
        if (deadline == NULL) goto done;
        if (!PyFloat_Check(deadline)) {
            Py_SETREF(deadline, PyNumber_Float(deadline));
            if (deadline == NULL) goto done;
        }
    } else {
        go = p->go[next];
        deadline = p->deadline[next];
        Py_INCREF(go);
        Py_INCREF(deadline);
    }
    if (next_search(p, next, pos_line, go, deadline) < 0) goto done;
    p->fast_turns++;
    r = 0;
done:
    Py_XDECREF(line);
    Py_XDECREF(newpos);
    Py_XDECREF(record);
    Py_XDECREF(pos_line);
    Py_XDECREF(go);
    Py_XDECREF(deadline);
    Py_XDECREF(msobj);
    Py_XDECREF(v);
    return r;
}

/* An error in a turn taken here is the arena's own fault: raised in the game's play(), as _answered does. */
static PyObject *fault(Path *p) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) PyException_SetTraceback(value, tb);
    PyObject *stop = get(p->game, GAME, G_STOP); /* borrowed */
    if (stop == NULL) goto raise;
    PyObject *done = PyObject_CallMethodNoArgs(stop, O[FUTURE].call[FUT_DONE]);
    if (done == NULL) goto raise;
    int finished = PyObject_IsTrue(done);
    Py_DECREF(done);
    if (finished == 0) {
        PyObject *r = PyObject_CallMethodOneArg(stop, O[FUTURE].call[FUT_SET_EXCEPTION], value);
        Py_XDECREF(r);
    }
    if (finished < 0 || PyErr_Occurred()) goto raise;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    Py_RETURN_NONE;
raise:
    if (PyErr_Occurred()) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return NULL;
    }
    PyErr_Restore(type, value, tb);
    return NULL;
}

/* Where a chunk is read: used with the GIL held, from the read until it is copied (a short line, at once, into the
 * reader's frame) or made a bytes object (before any call that could run Python code and let another thread's
 * loop read into it). */
static unsigned char chunk[CHUNK];
#define SHORT 16 /* the longest chunk the compiled path may take: "turn a1f\r\n" is 10 bytes */

static PyObject *reader_call(Reader *self, PyObject *args, PyObject *kw) {
    Path *p = self->path;
    PyObject *t = self->transport;
    int side = self->side;
    if (p == NULL || !p->armed[side]) return PyObject_CallMethodNoArgs(t, P[PIPE].call[T_ON_READABLE]);
    p->armed[side] = 0; /* one search, one answer: armed again when the next search is sent */
    int ok = may_take(p, side, t);
    if (ok < 0) return NULL;
    if (!ok) {
        p->handed_over++;
        return PyObject_CallMethodNoArgs(t, P[PIPE].call[T_ON_READABLE]);
    }
    Py_ssize_t n;
    do {
        n = read(self->fd, chunk, CHUNK);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        p->armed[side] = 1; /* nothing there: still the same search */
        Py_RETURN_NONE;
    }
    double now;
    if (n > SHORT) { /* made bytes before the time is taken: a test's clock (turns.use_clock) runs Python code */
        PyObject *data = PyBytes_FromStringAndSize((const char *)chunk, n);
        if (data == NULL) return NULL;
        if (monotonic(&now) < 0) {
            Py_DECREF(data);
            return fault(p);
        }
        p->handed_over++;
        return feed(t, data, now);
    }
    unsigned char text[SHORT];
    if (n > 0) memcpy(text, chunk, n);
    if (monotonic(&now) < 0) return fault(p);
    if (n <= 0) return PyObject_CallMethodNoArgs(t, P[PIPE].call[T_AT_EOF]);
    /* exactly one line: "turn " TOKEN ["\r"] "\n", TOKEN canonical: a piece, or a square and a piece */
    Py_ssize_t len = n - 1;
    if (text[len] != '\n') goto python;
    if (len > 0 && text[len - 1] == '\r') len--;
    if (len < 6 || memcmp(text, "turn ", 5) != 0) goto python;
    int place = -1, give; /* give 16: none (a placement alone) */
    if (len == 6) {
        give = hexval(text[5]);
    } else if ((len == 7 || len == 8) && text[5] >= 'a' && text[5] <= 'd' && text[6] >= '1' && text[6] <= '4') {
        place = (text[5] - 'a') + 4 * (text[6] - '1');
        give = len == 7 ? 16 : hexval(text[7]);
    } else {
        goto python;
    }
    if (give < 0) goto python;
    /* Position.apply, for a legal turn (else the Python path raises), which does not leave a strict game's alignment
     * to be claimed */
    PyObject *position = get(p->game, GAME, G_POSITION); /* borrowed: the game holds it until take_turn replaces it */
    if (position == NULL) return fault(p);
    if (Py_TYPE(position) != PositionType || PyTuple_GET_ITEM(position, POS_OUTCOME) != ONGOING) goto python;
    Py_INCREF(position);
    if (PyTuple_GET_ITEM(position, POS_VARIANT) != p->variant) { /* not the game's variant object: by value */
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(position, POS_VARIANT), p->variant, Py_EQ);
        if (same < 0) {
            Py_DECREF(position);
            return fault(p);
        }
        if (!same) {
            Py_DECREF(position);
            goto python;
        }
    }
    uint64_t occupied = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(position, POS_OCCUPIED));
    uint64_t planes = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(position, POS_PLANES));
    long held = PyLong_AsLong(PyTuple_GET_ITEM(position, POS_HELD));
    long available = PyLong_AsLong(PyTuple_GET_ITEM(position, POS_AVAILABLE));
    if (PyErr_Occurred()) {
        Py_DECREF(position);
        return fault(p);
    }
    int usual;
    PyObject *outcome = ONGOING;
    long hand = give; /* the piece in hand after it */
    if (place < 0) { /* give only */
        usual = give < 16 && held < 0 && (available >> give & 1);
    } else {
        uint64_t bit = (uint64_t)1 << place;
        usual = held >= 0 && held < 16 && !(occupied & bit);
        if (usual) {
            occupied |= bit;
            planes |= piece_planes((int)held, place);
            if (completes(p->rules, place, occupied, planes)) { /* a win; a piece given with it must exist */
                usual = !p->rules->strict && (give == 16 || (available >> give & 1));
                outcome = WIN;
                hand = -1;
            } else if (give == 16) { /* a placement alone fills the board, or is illegal */
                usual = occupied == 0xFFFF;
                outcome = DRAW;
                hand = -1;
            } else {
                usual = available >> give & 1; /* also false on a full board: no piece is left */
            }
        }
    }
    if (usual && outcome == ONGOING && p->adjudicate >= 0 &&
        16 - __builtin_popcountll(occupied) <= p->adjudicate)
        usual = 0;
    if (!usual) {
        Py_DECREF(position);
        goto python;
    }
    if (outcome == ONGOING) available &= ~(1L << give);
    int e = take_turn(p, side, t, now, text, len, position, place, give, occupied, planes, hand, available, outcome);
    Py_DECREF(position);
    if (e < 0) return fault(p);
    Py_RETURN_NONE;
python:
    p->handed_over++;
    return hand_over(t, text, n, now);
}

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quarto_arena.arena._turns.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_call = (ternaryfunc)reader_call,
    .tp_methods = reader_methods,
    .tp_doc = "Reader(transport, fd): an engine output's reader callback (loop.add_reader).",
};

/* --- the module: setup() holds this file to arena/turns.py's declaration ---------------------------------------- */

/* Raises ImportError unless `declared` is a tuple of exactly `names`: in their order when `ordered`, else in any
 * (a slot is found by its name). */
static int same_names(PyObject *declared, const char *const *names, int n, const char *what, int ordered) {
    int same = PyTuple_Check(declared) && PyTuple_GET_SIZE(declared) == n;
    for (int i = 0; same && i < n; i++) {
        same = 0;
        for (int j = ordered ? i : 0; j < (ordered ? i + 1 : n) && !same; j++) {
            PyObject *name = PyTuple_GET_ITEM(declared, j);
            same = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, names[i]) == 0;
        }
    }
    if (same) return 0;
    PyObject *mine = PyTuple_New(n);
    if (mine == NULL) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL) {
            Py_DECREF(mine);
            return -1;
        }
        PyTuple_SET_ITEM(mine, i, s);
    }
    PyErr_Format(PyExc_ImportError,
                 "arena/_turns.c and arena/turns.py disagree on %s: the C module reads and writes %R, the "
                 "declaration says %R (change both, and the C code that uses them)",
                 what, mine, declared);
    Py_DECREF(mine);
    return -1;
}

/* The offset of the slot `name` that `type` itself declares (an object slot, as __slots__ makes), or -1 with an
 * error set. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *d = PyDict_GetItemString(type->tp_dict, name); /* borrowed */
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX)
        return ((PyMemberDescrObject *)d)->d_member->offset;
    PyErr_Format(PyExc_ImportError, "%s.%s is not a slot of %s itself", type->tp_name, name, type->tp_name);
    return -1;
}

static int intern_all(const char *const *names, int n, PyObject **out) {
    for (int i = 0; i < n; i++) {
        PyObject *s = PyUnicode_InternFromString(names[i]);
        if (s == NULL) return -1;
        Py_XSETREF(out[i], s);
    }
    return 0;
}

static int setup_party(int p, PyObject *cls) {
    Party *party = &P[p];
    if (!PyType_Check(cls) || strcmp(((PyTypeObject *)cls)->tp_name, party->name) != 0) {
        PyErr_Format(PyExc_ImportError, "setup() expects turns.%s as party %d, not %R", party->name, p, cls);
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) return -1;
    char what[64];
    snprintf(what, sizeof what, "%s.__slots__", party->name);
    int e = same_names(slots, party->slots, party->nslots, what, 0);
    Py_DECREF(slots);
    if (e < 0) return -1;
    PyObject *calls = PyObject_GetAttrString(cls, "CALLS");
    if (calls == NULL) return -1;
    snprintf(what, sizeof what, "%s.CALLS", party->name);
    e = same_names(calls, party->calls, party->ncalls, what, 0);
    Py_DECREF(calls);
    if (e < 0) return -1;
    for (int i = 0; i < party->nslots; i++)
        if ((party->at[i] = slot_offset(type, party->slots[i])) < 0) return -1;
    if (intern_all(party->calls, party->ncalls, party->call) < 0) return -1;
    Py_INCREF(type);
    Py_XSETREF(party->type, type);
    return 0;
}

static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *parties, *calls, *values, *value_types, *turns, *outcome;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O", &PyTuple_Type, &parties, &PyDict_Type, &calls, &PyDict_Type, &values,
                          &PyTuple_Type, &value_types, &PyTuple_Type, &turns, &outcome))
        return NULL;
    ready = 0;
    if (PyTuple_GET_SIZE(parties) != PARTIES || PyTuple_GET_SIZE(value_types) != V_N) {
        PyErr_SetString(PyExc_ImportError, "setup(the 5 slotted classes, CALLS, VALUES, (Position, TurnRecord, Turn), "
                                           "TURNS, Outcome)");
        return NULL;
    }
    for (int p = 0; p < PARTIES; p++)
        if (setup_party(p, PyTuple_GET_ITEM(parties, p)) < 0) return NULL;
    for (int k = 0; k < OTHERS; k++) {
        PyObject *declared = PyDict_GetItemString(calls, O[k].name); /* borrowed */
        char what[64];
        snprintf(what, sizeof what, "CALLS[%s]", O[k].name);
        if (declared == NULL) declared = Py_None;
        if (same_names(declared, O[k].calls, O[k].ncalls, what, 0) < 0) return NULL;
        if (intern_all(O[k].calls, O[k].ncalls, O[k].call) < 0) return NULL;
    }
    if (PyDict_GET_SIZE(calls) != OTHERS) {
        PyErr_Format(PyExc_ImportError, "turns.CALLS declares %R: the C module calls on none but the %d it reads", calls,
                     OTHERS);
        return NULL;
    }
    for (int v = 0; v < V_N; v++) {
        PyObject *declared = PyDict_GetItemString(values, VALUE_NAMES[v]); /* borrowed */
        char what[64];
        snprintf(what, sizeof what, "VALUES[%s]", VALUE_NAMES[v]);
        if (declared == NULL) declared = Py_None;
        if (same_names(declared, VALUE_SLOTS[v], VALUE_COUNTS[v], what, v == V_POSITION) < 0) return NULL;
        if (!PyType_Check(PyTuple_GET_ITEM(value_types, v))) {
            PyErr_SetString(PyExc_ImportError, "setup() expects (Position, TurnRecord, Turn)");
            return NULL;
        }
    }
    PyTypeObject *position = (PyTypeObject *)PyTuple_GET_ITEM(value_types, V_POSITION);
    PyTypeObject *record = (PyTypeObject *)PyTuple_GET_ITEM(value_types, V_RECORD);
    PyTypeObject *turn = (PyTypeObject *)PyTuple_GET_ITEM(value_types, V_TURN);
    if (!PyType_IsSubtype(position, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ImportError, "Position is a tuple (a NamedTuple)");
        return NULL;
    }
    PyObject *fields = PyObject_GetAttrString((PyObject *)position, "_fields");
    if (fields == NULL) return NULL;
    int e = same_names(fields, POSITION_FIELDS, POS_N, "Position._fields", 1);
    Py_DECREF(fields);
    if (e < 0) return NULL;
    for (int i = 0; i < 3; i++)
        if ((record_at[i] = slot_offset(record, RECORD_SLOTS[i])) < 0) return NULL;
    if ((turn_token_at = slot_offset(turn, TURN_SLOTS[0])) < 0) return NULL;
    if (PyTuple_GET_SIZE(turns) != 17) goto bad_turns;
    for (int i = 0; i < 17; i++) {
        PyObject *row = PyTuple_GET_ITEM(turns, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 17) goto bad_turns;
        for (int j = 0; j < 17; j++) {
            PyObject *x = PyTuple_GET_ITEM(row, j);
            if (x != Py_None && !PyObject_TypeCheck(x, turn)) goto bad_turns;
        }
    }
    PyObject *ongoing = PyObject_GetAttrString(outcome, "ONGOING"), *win = PyObject_GetAttrString(outcome, "WIN"),
             *draw = PyObject_GetAttrString(outcome, "DRAW");
    if (ongoing == NULL || win == NULL || draw == NULL) {
        Py_XDECREF(ongoing);
        Py_XDECREF(win);
        Py_XDECREF(draw);
        return NULL;
    }
    Py_XSETREF(ONGOING, ongoing);
    Py_XSETREF(WIN, win);
    Py_XSETREF(DRAW, draw);
    Py_INCREF(position);
    Py_XSETREF(PositionType, position);
    Py_INCREF(record);
    Py_XSETREF(RecordType, record);
    Py_INCREF(turn);
    Py_XSETREF(TurnType, turn);
    Py_INCREF(turns);
    Py_XSETREF(TURNS, turns);
    ready = 1;
    Py_RETURN_NONE;
bad_turns:
    PyErr_SetString(PyExc_ImportError, "TURNS is 17 x 17 Turns (or None)");
    return NULL;
}

static PyObject *set_clock(PyObject *module, PyObject *fn) {
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "clock(a function of no arguments giving seconds, or None)");
        return NULL;
    }
    Py_XSETREF(clock_fn, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(the slotted classes of arena/turns.py, CALLS, VALUES, (Position, TurnRecord, Turn), TURNS, Outcome)"},
    {"clock", set_clock, METH_O, "clock(fn): answers timed by fn() (seconds) instead of CLOCK_MONOTONIC; None: that."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "quarto_arena.arena._turns", "The arena's common engine turn, compiled.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__turns(void) {
    if ((SIDE0 = PyLong_FromLong(0)) == NULL || (SIDE1 = PyLong_FromLong(1)) == NULL) return NULL;
    if (PyType_Ready(&RulesType) < 0 || PyType_Ready(&PathType) < 0 || PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Rules", (PyObject *)&RulesType) < 0 ||
        PyModule_AddObjectRef(m, "Path", (PyObject *)&PathType) < 0 ||
        PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddIntConstant(m, "CHUNK", CHUNK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
