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

/* set by setup() */
static PyTypeObject *PositionType;
static PyObject *TURNS;       /* TURNS[square][piece], 17 x 17 */
static PyObject *ONGOING, *WIN, *DRAW; /* Outcome's members */
static PyTypeObject *RecordType;
static PyObject *set_token, *set_ms, *set_score; /* TurnRecord's slot descriptors */
static PyTypeObject *SearchClockType;
static Py_ssize_t off_sent_at, off_seconds, off_at, off_answered_at, off_running, off_handle, off_when;
static PyObject *SIDE0, *SIDE1;

/* Where a chunk is read: used with the GIL held, from the read until it is copied (a short line, at once, into the
 * reader's frame) or made a bytes object (before any call that could run Python code and let another thread's
 * loop read into it). */
static unsigned char chunk[CHUNK];
#define SHORT 16 /* the longest chunk the compiled path may take: "turn a1f\r\n" is 10 bytes */

/* interned attribute names */
#define NAMES(X) \
    X(_exchange) X(_search) X(_clock) X(_then) X(_waiter) X(_abandoned) X(_transport) \
    X(score) X(position) X(go) X(turn) \
    X(_buf) X(_skip) X(received_at) X(last_line) X(_feed) X(_at_eof) X(_on_readable) \
    X(_ended) X(returncode) X(_closing) X(_in) X(_pending) X(_flush) \
    X(answered_at) X(_running) X(at) X(sent_at) X(seconds) X(_handle) X(_when) X(_fire) \
    X(position_line) X(turns) X(records) X(_side) X(_stop) \
    X(charge) X(go_line) X(deadline) X(time) X(call_at) X(add_writer) X(cancel) X(token) \
    X(search_soon) X(_resend) X(done) X(set_exception) X(set_result)
#define DECL(n) static PyObject *s_##n;
NAMES(DECL)
#undef DECL

/* --- the rules of a variant, for the win test --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *variant;
    int strict; /* claims must be called: a placement that completes an alignment uncalled goes the Python way */
    int n[16];
    uint64_t mask[16][MAX_GROUPS];
    int nw[16][MAX_GROUPS];
    uint64_t wide[16][MAX_GROUPS][MAX_WIDES];
} Rules;

static int rules_init(Rules *self, PyObject *args, PyObject *kw) {
    PyObject *variant, *through;
    if (!PyArg_ParseTuple(args, "OO!", &variant, &PyTuple_Type, &through)) return -1;
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
    PyObject *strict = PyObject_GetAttrString(variant, "strict");
    if (strict == NULL) return -1;
    self->strict = PyObject_IsTrue(strict);
    Py_DECREF(strict);
    if (self->strict < 0) return -1;
    Py_INCREF(variant);
    Py_XSETREF(self->variant, variant);
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "through: a tuple of (mask, wides) pairs per square");
    return -1;
}

static void rules_dealloc(Rules *self) {
    Py_XDECREF(self->variant);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject RulesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quarto_arena.arena._turns.Rules",
    .tp_basicsize = sizeof(Rules),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)rules_init,
    .tp_dealloc = (destructor)rules_dealloc,
    .tp_doc = "Rules(variant, variant.through): a variant's winning groups through each square, for the win test.",
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

static int path_init(Path *self, PyObject *args, PyObject *kw) {
    PyObject *game, *variant, *sessions, *transports, *rules, *loop, *answered, *clocks, *gos, *deadlines, *safeties, *in_fds;
    int adjudicate;
    if (!PyArg_ParseTuple(args, "OOO!O!O!OOO!OOO!O!i", &game, &variant, &PyTuple_Type, &sessions, &PyTuple_Type, &transports,
                          &RulesType, &rules, &loop, &answered, &PyTuple_Type, &clocks, &gos, &deadlines,
                          &PyTuple_Type, &safeties, &PyTuple_Type, &in_fds, &adjudicate))
        return -1;
    if (PyTuple_GET_SIZE(sessions) != 2 || PyTuple_GET_SIZE(transports) != 2 || PyTuple_GET_SIZE(clocks) != 2 ||
        PyTuple_GET_SIZE(safeties) != 2 || PyTuple_GET_SIZE(in_fds) != 2) {
        PyErr_SetString(PyExc_ValueError, "a fast path has two sides");
        return -1;
    }
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
    if (!PyArg_ParseTuple(args, "Oi", &transport, &fd)) return -1;
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
 * (arena/turns.py leaves the compiled path off elsewhere, where its clock may be another one) */
static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return (double)ns / 1e9;
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

static int set_attr_double(PyObject *o, PyObject *name, double v) {
    PyObject *f = PyFloat_FromDouble(v);
    if (f == NULL) return -1;
    int r = PyObject_SetAttr(o, name, f);
    Py_DECREF(f);
    return r;
}

static int getattr_is(PyObject *o, PyObject *name, PyObject *expected) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int same = v == expected;
    Py_DECREF(v);
    return same;
}

/* SearchClock's slots, read and written at the offsets of its member descriptors (found at setup): the same
 * store getattr and setattr reach, without the type's look-up. */
static PyObject *sget(PyObject *o, Py_ssize_t offset, PyObject *name) { /* borrowed */
    PyObject *v = *(PyObject **)((char *)o + offset);
    if (v == NULL) PyErr_SetObject(PyExc_AttributeError, name);
    return v;
}

static void sset(PyObject *o, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)o + offset), *old = *slot;
    Py_INCREF(value);
    *slot = value;
    Py_XDECREF(old);
}

static int sset_double(PyObject *o, Py_ssize_t offset, double value) {
    PyObject *f = PyFloat_FromDouble(value);
    if (f == NULL) return -1;
    sset(o, offset, f);
    Py_DECREF(f);
    return 0;
}

static int sget_double(PyObject *o, Py_ssize_t offset, PyObject *name, double *out) {
    PyObject *v = sget(o, offset, name);
    if (v == NULL) return -1;
    *out = PyFloat_AsDouble(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* Hands a chunk read here to the Python path: what _on_readable does after its os.read. */
static PyObject *hand_over(PyObject *t, const unsigned char *bytes, Py_ssize_t n, double now) {
    if (n <= 0) return PyObject_CallMethodNoArgs(t, s__at_eof);
    PyObject *data = PyBytes_FromStringAndSize((const char *)bytes, n);
    if (data == NULL) return NULL;
    if (set_attr_double(t, s_received_at, now) < 0) {
        Py_DECREF(data);
        return NULL;
    }
    PyObject *r = PyObject_CallMethodOneArg(t, s__feed, data);
    Py_DECREF(data);
    return r;
}

/* The state checks of a read, before it: the search of `side` runs as search_soon left it, nothing waits in the
 * line buffer. 1: the fast path may take the chunk; 0: not; -1: error. */
static int may_take(Path *p, int side, PyObject *t) {
    PyObject *session = p->session[side];
    PyObject *exchange = PyObject_GetAttr(session, s__exchange);
    if (exchange == NULL) return -1;
    int ok = exchange != Py_None;
    if (ok) ok = getattr_is(session, s__search, exchange);
    Py_DECREF(exchange);
    if (ok != 1) return ok;
    PyObject *search = exchange; /* borrowed: the session holds it */
    if ((ok = getattr_is(search, s_score, Py_None)) != 1) return ok;
    PyObject *clock = PyObject_GetAttr(session, s__clock);
    if (clock == NULL) return -1;
    ok = Py_TYPE(clock) == SearchClockType;
    Py_DECREF(clock);
    if (!ok) return 0;
    PyObject *buf = PyObject_GetAttr(t, s__buf);
    if (buf == NULL) return -1;
    ok = PyBytes_Check(buf) && PyBytes_GET_SIZE(buf) == 0;
    Py_DECREF(buf);
    if (!ok) return 0;
    return getattr_is(t, s__skip, Py_False);
}

/* SearchClock.start(seconds), as it does it. */
static int clock_start(Path *p, PyObject *clock, PyObject *seconds_obj) {
    double seconds = PyFloat_AS_DOUBLE(seconds_obj);
    double now = monotonic();
    if (sset_double(clock, off_sent_at, now) < 0) return -1;
    sset(clock, off_seconds, seconds_obj);
    if (sset_double(clock, off_at, now + seconds) < 0) return -1;
    sset(clock, off_answered_at, Py_None);
    sset(clock, off_running, Py_True);
    PyObject *lt = PyObject_CallMethodNoArgs(p->loop, s_time);
    if (lt == NULL) return -1;
    double when = PyFloat_AsDouble(lt);
    Py_DECREF(lt);
    if (when == -1.0 && PyErr_Occurred()) return -1;
    when += seconds;
    PyObject *h = sget(clock, off_handle, s__handle);
    if (h == NULL) return -1;
    if (h != Py_None) {
        double old;
        if (sget_double(clock, off_when, s__when, &old) < 0) return -1;
        if (old <= when) return 0; /* the pending timer fires first and moves itself on */
        PyObject *r = PyObject_CallMethodNoArgs(h, s_cancel);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    PyObject *fire = PyObject_GetAttr(clock, s__fire);
    if (fire == NULL) return -1;
    PyObject *wf = PyFloat_FromDouble(when);
    if (wf == NULL) {
        Py_DECREF(fire);
        return -1;
    }
    PyObject *handle = PyObject_CallMethodObjArgs(p->loop, s_call_at, wf, fire, NULL);
    Py_DECREF(fire);
    if (handle == NULL) {
        Py_DECREF(wf);
        return -1;
    }
    sset(clock, off_handle, handle);
    sset(clock, off_when, wf);
    Py_DECREF(handle);
    Py_DECREF(wf);
    return 0;
}

/* The other side's search, as EngineSession.search_soon does it (today's search_soon where anything is unusual). */
static int next_search(Path *p, int side, PyObject *line, PyObject *go, PyObject *deadline) {
    PyObject *session = p->session[side], *t = p->transport[side];
    PyObject *search = NULL, *clock = NULL, *v = NULL;
    int usual = 1, r = -1;
    Py_ssize_t nl, ng;
    const char *ls = PyUnicode_AsUTF8AndSize(line, &nl);
    const char *gs = ls == NULL ? NULL : PyUnicode_AsUTF8AndSize(go, &ng);
    if (gs == NULL) return -1;
    if (nl + ng + 2 > OUT_MAX) usual = 0;
    /* the transport: the session's, running, nothing pending */
    if (usual && (usual = getattr_is(session, s__transport, t)) < 0) return -1;
    if (usual && (usual = getattr_is(t, s__ended, Py_None)) < 0) return -1;
    if (usual && (usual = getattr_is(t, s_returncode, Py_None)) < 0) return -1;
    if (usual && (usual = getattr_is(t, s__closing, Py_None)) < 0) return -1;
    if (usual) {
        v = PyObject_GetAttr(t, s__pending);
        if (v == NULL) return -1;
        usual = PyBytes_Check(v) && PyBytes_GET_SIZE(v) == 0;
        Py_CLEAR(v);
        v = PyObject_GetAttr(t, s__in);
        if (v == NULL) return -1;
        usual = usual && PyLong_Check(v) && PyLong_AsLong(v) == p->in_fd[side] && p->in_fd[side] >= 0;
        Py_CLEAR(v);
    }
    if (usual) {
        search = PyObject_GetAttr(session, s__search);
        clock = search == NULL ? NULL : PyObject_GetAttr(session, s__clock);
        if (clock == NULL) goto done;
        usual = search != Py_None && Py_TYPE(clock) == SearchClockType;
    }
    if (!usual) {
        v = PyObject_CallMethodObjArgs(session, s_search_soon, line, go, deadline, p->answered, NULL);
        r = v == NULL ? -1 : 0;
        goto done;
    }
    if (PyObject_SetAttr(search, s_position, line) < 0 || PyObject_SetAttr(search, s_go, go) < 0 ||
        PyObject_SetAttr(search, s_score, Py_None) < 0 || PyObject_SetAttr(search, s_turn, Py_None) < 0 ||
        PyObject_SetAttr(session, s__exchange, search) < 0 || PyObject_SetAttr(session, s__waiter, Py_None) < 0 ||
        PyObject_SetAttr(session, s__then, p->answered) < 0 || PyObject_SetAttr(session, s__abandoned, Py_None) < 0)
        goto done;
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
        v = PyObject_CallMethodObjArgs(session, s__resend, text, deadline, NULL);
        Py_DECREF(text);
        r = v == NULL ? -1 : 0;
        goto done;
    }
    if (n < len) { /* what the pipe could not take waits for it, as _write does */
        PyObject *rest = PyBytes_FromStringAndSize(out + n, len - n);
        if (rest == NULL) goto done;
        int e = PyObject_SetAttr(t, s__pending, rest);
        Py_DECREF(rest);
        if (e < 0) goto done;
        PyObject *flush = PyObject_GetAttr(t, s__flush);
        if (flush == NULL) goto done;
        PyObject *fd = PyLong_FromLong(p->in_fd[side]);
        if (fd == NULL) {
            Py_DECREF(flush);
            goto done;
        }
        v = PyObject_CallMethodObjArgs(p->loop, s_add_writer, fd, flush, NULL);
        Py_DECREF(fd);
        Py_DECREF(flush);
        if (v == NULL) goto done;
    }
    if (clock_start(p, clock, deadline) < 0) goto done;
    p->armed[side] = 1;
    r = 0;
done:
    Py_XDECREF(v);
    Py_XDECREF(search);
    Py_XDECREF(clock);
    return r;
}

/* The game's Python state changed by a turn, now that it is known to be legal and usual. Errors are the arena's
 * own faults: they end the game as _answered's do. */
static int take_turn(Path *p, int side, PyObject *t, double now, const unsigned char *text, Py_ssize_t linelen,
                     PyObject *position, int place, int give, uint64_t occupied, uint64_t planes, long held,
                     long available, PyObject *outcome) {
    PyObject *game = p->game, *session = p->session[side];
    PyObject *clock = NULL, *line = NULL, *newpos = NULL, *turns = NULL, *records = NULL, *record = NULL;
    PyObject *pos_line = NULL, *go = NULL, *deadline = NULL, *msobj = NULL, *v = NULL;
    int r = -1;
    /* the transport's line, the session's end of the search */
    line = PyUnicode_DecodeASCII((const char *)text, linelen, NULL);
    if (line == NULL || PyObject_SetAttr(t, s_last_line, line) < 0) goto done;
    if (PyObject_SetAttr(session, s__exchange, Py_None) < 0) goto done;
    clock = PyObject_GetAttr(session, s__clock); /* a SearchClock: may_take checked it */
    if (clock == NULL || sset_double(clock, off_answered_at, now) < 0) goto done;
    sset(clock, off_running, Py_False);
    if (PyObject_SetAttr(session, s__then, Py_None) < 0) goto done;
    /* SearchClock.answer_ms */
    double at, sent;
    if (sget_double(clock, off_at, s_at, &at) < 0 || sget_double(clock, off_sent_at, s_sent_at, &sent) < 0) goto done;
    long ms = py_round(((now < at ? now : at) - sent) * 1000);
    if (ms < 0) ms = 0;
    msobj = PyLong_FromLong(ms);
    if (msobj == NULL) goto done;
    if (p->timed) {
        v = PyObject_CallMethodOneArg(p->clock[side], s_charge, msobj);
        if (v == NULL) goto done;
        Py_CLEAR(v);
    }
    /* _Game.record: the position after it, the line, the turn and its record (a win recorded as canonical makes it:
     * the placement alone) */
    int recorded = outcome == WIN ? 16 : give;
    PyObject *turn = PyTuple_GET_ITEM(PyTuple_GET_ITEM(TURNS, place < 0 ? 16 : place), recorded); /* borrowed */
    PyObject *token = PyObject_GetAttr(turn, s_token);
    if (token == NULL) goto done;
    newpos = PositionType->tp_alloc(PositionType, 7);
    if (newpos == NULL) {
        Py_DECREF(token);
        goto done;
    }
    PyObject *items[7] = {
        PyTuple_GET_ITEM(position, 0), PyLong_FromUnsignedLongLong(occupied), PyLong_FromUnsignedLongLong(planes),
        PyLong_FromLong(held), PyLong_FromLong(available), Py_False, outcome,
    };
    Py_INCREF(items[0]);
    Py_INCREF(Py_False);
    Py_INCREF(outcome);
    for (int i = 0; i < 7; i++) PyTuple_SET_ITEM(newpos, i, items[i]);
    if (items[1] == NULL || items[2] == NULL || items[3] == NULL || items[4] == NULL) {
        Py_DECREF(token);
        goto done;
    }
    turns = PyObject_GetAttr(game, s_turns);
    records = turns == NULL ? NULL : PyObject_GetAttr(game, s_records);
    v = records == NULL ? NULL : PyObject_GetAttr(game, s_position_line);
    if (v == NULL || !PyList_Check(turns) || !PyList_Check(records)) {
        if (v != NULL) PyErr_SetString(PyExc_TypeError, "a game's turns and records are lists");
        Py_DECREF(token);
        goto done;
    }
    pos_line = PyUnicode_FromFormat(PyList_GET_SIZE(turns) ? "%U %U" : "%U turns %U", v, token);
    Py_CLEAR(v);
    record = pos_line == NULL ? NULL : RecordType->tp_alloc(RecordType, 0);
    if (record == NULL) {
        Py_DECREF(token);
        goto done;
    }
    int e = Py_TYPE(set_token)->tp_descr_set(set_token, record, token);
    Py_DECREF(token);
    if (e < 0 || Py_TYPE(set_ms)->tp_descr_set(set_ms, record, msobj) < 0 ||
        Py_TYPE(set_score)->tp_descr_set(set_score, record, Py_None) < 0)
        goto done;
    if (PyObject_SetAttr(game, s_position, newpos) < 0 || PyObject_SetAttr(game, s_position_line, pos_line) < 0 ||
        PyList_Append(turns, turn) < 0 || PyList_Append(records, record) < 0)
        goto done;
    if (outcome != ONGOING) { /* _Game._ask: the game is over, play() goes on */
        PyObject *stop = PyObject_GetAttr(game, s__stop);
        if (stop == NULL) goto done;
        v = PyObject_CallMethodOneArg(stop, s_set_result, Py_None);
        Py_DECREF(stop);
        if (v == NULL) goto done;
        p->fast_turns++;
        r = 0;
        goto done;
    }
    /* _Game._ask: the other player searches */
    int next = (int)(PyList_GET_SIZE(turns) % 2);
    if (PyObject_SetAttr(game, s__side, next ? SIDE1 : SIDE0) < 0) goto done;
    if (p->timed) {
        go = PyObject_CallMethodOneArg(p->clock[next], s_go_line, p->clock[1 - next]);
        deadline = go == NULL ? NULL : PyObject_CallMethodOneArg(p->clock[next], s_deadline, p->safety[next]);
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
    Py_XDECREF(clock);
    Py_XDECREF(line);
    Py_XDECREF(newpos);
    Py_XDECREF(turns);
    Py_XDECREF(records);
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
    PyObject *stop = PyObject_GetAttr(p->game, s__stop);
    if (stop == NULL) goto raise;
    PyObject *done = PyObject_CallMethodNoArgs(stop, s_done);
    if (done == NULL) {
        Py_DECREF(stop);
        goto raise;
    }
    int finished = PyObject_IsTrue(done);
    Py_DECREF(done);
    if (finished == 0) {
        PyObject *r = PyObject_CallMethodOneArg(stop, s_set_exception, value);
        Py_XDECREF(r);
    }
    Py_DECREF(stop);
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

static PyObject *reader_call(Reader *self, PyObject *args, PyObject *kw) {
    Path *p = self->path;
    PyObject *t = self->transport;
    int side = self->side;
    if (p == NULL || !p->armed[side]) return PyObject_CallMethodNoArgs(t, s__on_readable);
    p->armed[side] = 0; /* one search, one answer: armed again when the next search is sent */
    int ok = may_take(p, side, t);
    if (ok < 0) return NULL;
    if (!ok) {
        p->handed_over++;
        return PyObject_CallMethodNoArgs(t, s__on_readable);
    }
    Py_ssize_t n;
    do {
        n = read(self->fd, chunk, CHUNK);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        p->armed[side] = 1; /* nothing there: still the same search */
        Py_RETURN_NONE;
    }
    double now = monotonic();
    if (n > SHORT) {
        p->handed_over++;
        return hand_over(t, chunk, n, now);
    }
    if (n <= 0) return hand_over(t, chunk, 0, now);
    unsigned char text[SHORT];
    memcpy(text, chunk, n);
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
    PyObject *position = PyObject_GetAttr(p->game, s_position);
    if (position == NULL) return fault(p);
    if (Py_TYPE(position) != PositionType || PyTuple_GET_ITEM(position, 6) != ONGOING) {
        Py_DECREF(position);
        goto python;
    }
    if (PyTuple_GET_ITEM(position, 0) != p->variant) { /* not the game's variant object: compared by value */
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(position, 0), p->variant, Py_EQ);
        if (same < 0) {
            Py_DECREF(position);
            return fault(p);
        }
        if (!same) {
            Py_DECREF(position);
            goto python;
        }
    }
    uint64_t occupied = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(position, 1));
    uint64_t planes = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(position, 2));
    long held = PyLong_AsLong(PyTuple_GET_ITEM(position, 3));
    long available = PyLong_AsLong(PyTuple_GET_ITEM(position, 4));
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

/* --- the module ---------------------------------------------------------------------------------------------- */

/* The offset of a slot of `type` (an object slot, as __slots__ makes), or -1 with an error set. */
static Py_ssize_t slot_offset(PyObject *type, const char *name) {
    PyObject *d = PyObject_GetAttrString(type, name);
    if (d == NULL) return -1;
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX)
        offset = ((PyMemberDescrObject *)d)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "%s is not a slot", name);
    Py_DECREF(d);
    return offset;
}

static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *position_type, *turns, *outcome, *record_type, *descriptors, *clock_type;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!O!", &PyType_Type, &position_type, &PyTuple_Type, &turns, &outcome,
                          &PyType_Type, &record_type, &PyTuple_Type, &descriptors, &PyType_Type, &clock_type))
        return NULL;
    if ((off_sent_at = slot_offset(clock_type, "sent_at")) < 0 ||
        (off_seconds = slot_offset(clock_type, "seconds")) < 0 || (off_at = slot_offset(clock_type, "at")) < 0 ||
        (off_answered_at = slot_offset(clock_type, "answered_at")) < 0 ||
        (off_running = slot_offset(clock_type, "_running")) < 0 ||
        (off_handle = slot_offset(clock_type, "_handle")) < 0 || (off_when = slot_offset(clock_type, "_when")) < 0)
        return NULL;
    Py_INCREF(clock_type);
    Py_XSETREF(SearchClockType, (PyTypeObject *)clock_type);
    if (!PyType_IsSubtype((PyTypeObject *)position_type, &PyTuple_Type) || PyTuple_GET_SIZE(turns) != 17 ||
        PyTuple_GET_SIZE(descriptors) != 3) {
        PyErr_SetString(PyExc_ValueError, "setup(Position, TURNS, Outcome, TurnRecord, its 3 slots, SearchClock)");
        return NULL;
    }
    for (int i = 0; i < 17; i++) {
        PyObject *row = PyTuple_GET_ITEM(turns, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 17) {
            PyErr_SetString(PyExc_ValueError, "TURNS is 17 x 17");
            return NULL;
        }
    }
    for (int i = 0; i < 3; i++) {
        PyObject *d = PyTuple_GET_ITEM(descriptors, i);
        if (Py_TYPE(d)->tp_descr_set == NULL) {
            PyErr_SetString(PyExc_TypeError, "TurnRecord's slots are data descriptors");
            return NULL;
        }
    }
    Py_INCREF(position_type);
    Py_XSETREF(PositionType, (PyTypeObject *)position_type);
    Py_INCREF(turns);
    Py_XSETREF(TURNS, turns);
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
    Py_INCREF(record_type);
    Py_XSETREF(RecordType, (PyTypeObject *)record_type);
    PyObject *d0 = PyTuple_GET_ITEM(descriptors, 0), *d1 = PyTuple_GET_ITEM(descriptors, 1),
             *d2 = PyTuple_GET_ITEM(descriptors, 2);
    Py_INCREF(d0);
    Py_INCREF(d1);
    Py_INCREF(d2);
    Py_XSETREF(set_token, d0);
    Py_XSETREF(set_ms, d1);
    Py_XSETREF(set_score, d2);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(Position, TURNS, Outcome, TurnRecord, (token, ms, score) slots, SearchClock)"},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "quarto_arena.arena._turns", "The arena's common engine turn, compiled.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__turns(void) {
#define INTERN(n) if ((s_##n = PyUnicode_InternFromString(#n)) == NULL) return NULL;
    NAMES(INTERN)
#undef INTERN
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
