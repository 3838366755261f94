/*
 * bot.c - a Quarto bot speaking UQI, the Universal Quarto Interface (SPEC.md), over standard input and output.
 * Written by `quarto-arena new-bot c`: a starting point. One file, C99, libc only.
 *
 *     cc -O2 -o bot bot.c
 *     ./bot
 *
 * Play: a small alpha-beta search over turns (a turn places the piece in hand and gives one, SPEC 2.4), deepening
 * one turn at a time until its time is spent; it finds every win within its depth and never gives a piece that
 * wins at once when a safe one exists. The option Depth caps the search (a `go depth N` replaces it).
 *
 * Why one thread is enough: UQI wants `isready` answered and `stop` obeyed during a search (SPEC 4.7). This bot
 * searches at most MAX_SEARCH_MS before it reads the next line, so both wait no longer than that. `go infinite`
 * wants its turn only after `stop` (SPEC 4.5): the bot searches as usual, then holds the turn until `stop`; while
 * it holds one it refuses `position`, `go`, `newgame` and `setoption` (SPEC 4.10). A bot that searches longer
 * must read its input during the search (a reader thread, or poll() between nodes).
 */

#define _POSIX_C_SOURCE 199309L
#define _DEFAULT_SOURCE /* getloadavg */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE 4096 /* SPEC 3.1: no line is longer than this many bytes */
#define MAX_WORDS 600
#define MAX_SEARCH_MS 250 /* the longest search, whatever the limits: see "Why one thread is enough" */
#define MOVE_OVERHEAD_MS 50.0 /* SPEC 4.5: kept back from every limit on a loaded machine, times the load */
#define DEPTH_DEFAULT 3
#define DEPTH_MAX 16
#define WIN 1000

/* ---- variant ------------------------------------------------------------------------------------------- */

static unsigned lines[19]; /* winning groups as square masks (bit s = square s) */
static int line_sq[19][4]; /* the four squares of each group */
static int nlines;
static int attr_mask = 0xF; /* piece bits that count for a win */
static int strict_claims;   /* 1: a win must be called ("b3!"), a missed one may be claimed ("!") */

static void set_variant(int advanced, int attrs, int strict) {
    int r, c;
    nlines = 0;
    for (r = 0; r < 4; r++) lines[nlines++] = 0xFu << (4 * r);
    for (c = 0; c < 4; c++) lines[nlines++] = 0x1111u << c;
    lines[nlines++] = 1u | 1u << 5 | 1u << 10 | 1u << 15; /* a1 b2 c3 d4 */
    lines[nlines++] = 1u << 3 | 1u << 6 | 1u << 9 | 1u << 12; /* d1 c2 b3 a4 */
    if (advanced)
        for (r = 0; r < 3; r++)
            for (c = 0; c < 3; c++) lines[nlines++] = 0x33u << (4 * r + c);
    for (r = 0; r < nlines; r++) {
        int k, n = 0;
        for (k = 0; k < 16; k++)
            if (lines[r] >> k & 1u) line_sq[r][n++] = k;
    }
    attr_mask = attrs;
    strict_claims = strict;
}

/* ---- position ------------------------------------------------------------------------------------------ */

typedef struct {
    int cell[16];  /* piece 0..15 on each square, -1 when empty (square = (row-1)*4 + column) */
    int hand;      /* piece the player to move must place, -1 when they only give */
    int avail;     /* mask of pieces neither on the board nor in hand */
    int claimable; /* strict: the last placement completed an alignment that was not called */
    int over;      /* the game has ended */
} Pos;


static void pos_start(Pos *p) {
    int s;
    for (s = 0; s < 16; s++) p->cell[s] = -1;
    p->hand = -1;
    p->avail = 0xFFFF;
    p->claimable = 0;
    p->over = 0;
}

static int full(const Pos *p) {
    int s;
    for (s = 0; s < 16; s++)
        if (p->cell[s] < 0) return 0;
    return 1;
}

/* Is group `i` full, with a counted attribute shared by its four pieces? */
static int group_wins(const int cell[16], int i) {
    int all = 0xF, none = 0xF, k;
    for (k = 0; k < 4; k++) {
        int v = cell[line_sq[i][k]];
        if (v < 0) return 0;
        all &= v;
        none &= ~v;
    }
    return ((all | none) & attr_mask) != 0;
}

/* Does some full group through square `sq` share a counted attribute? */
static int completes(const int cell[16], int sq) {
    int i;
    for (i = 0; i < nlines; i++)
        if ((lines[i] >> sq & 1u) && group_wins(cell, i)) return 1;
    return 0;
}

/* Would placing `piece` on empty square `sq` complete a group? */
static int wins_with(Pos *p, int piece, int sq) {
    int w;
    p->cell[sq] = piece;
    w = completes(p->cell, sq);
    p->cell[sq] = -1;
    return w;
}

static int hexval(int ch) {
    ch = tolower(ch);
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

static int any_alignment(const int cell[16]) {
    int s;
    for (s = 0; s < 16; s++)
        if (cell[s] >= 0 && completes(cell, s)) return 1;
    return 0;
}

/* Reads "BOARD HAND" (SPEC 2.3). Returns NULL on success, or why it is invalid. */
static const char *parse_position(Pos *p, const char *board, const char *hand) {
    int row = 4, col = 0, used = 0;
    const char *c;
    pos_start(p);
    for (c = board; *c; c++) {
        if (*c == '/') {
            if (col != 4) return "a row does not have 4 cells";
            if (--row < 1) return "more than 4 rows";
            col = 0;
            continue;
        }
        if (col == 4) return "a row does not have 4 cells";
        if (*c != '.') {
            int v = hexval((unsigned char)*c);
            if (v < 0) return "a cell is not '.' or a hex digit";
            if (used >> v & 1) return "a piece appears twice";
            used |= 1 << v;
            p->cell[(row - 1) * 4 + col] = v;
        }
        col++;
    }
    if (row != 1 || col != 4) return "the board does not have 4 rows of 4 cells";
    if (strcmp(hand, "-") != 0) {
        int v = hand[1] ? -1 : hexval((unsigned char)hand[0]);
        if (v < 0) return "the piece in hand is not one hex digit or '-'";
        if (used >> v & 1) return "the piece in hand is also on the board";
        if (full(p)) return "the board is full and a piece is in hand";
        used |= 1 << v;
        p->hand = v;
    }
    p->avail = 0xFFFF & ~used;
    /* An alignment already on the board ended an auto game; under strict claims it is dead (never called). */
    if (!strict_claims && any_alignment(p->cell)) {
        if (p->hand >= 0) return "the board already shows a winning group, so no piece can be in hand";
        p->over = 1;
    } else if (full(p)) {
        p->over = 1;
    }
    return NULL;
}

/* Applies one turn token (SPEC 2.4). Returns NULL on success, or why it cannot be played. */
static const char *apply_turn(Pos *p, const char *tok) {
    int len = (int)strlen(tok), sq, give = -1, call = 0, win;
    if (p->over) return "the game is already over";
    if (strcmp(tok, "!") == 0) {
        if (!strict_claims || !p->claimable) return "nothing to claim";
        p->over = 1;
        return NULL;
    }
    if (len == 1) { /* give only */
        int v = hexval((unsigned char)tok[0]);
        if (v < 0) return "not a turn token";
        if (p->hand >= 0) return "a piece is in hand and must be placed";
        if (!(p->avail >> v & 1)) return "that piece is not available";
        p->hand = v;
        p->avail &= ~(1 << v);
        p->claimable = 0;
        return NULL;
    }
    {
        int colc = tolower((unsigned char)tok[0]), rowc = tok[1];
        if (colc < 'a' || colc > 'd' || rowc < '1' || rowc > '4') return "not a turn token";
        sq = (rowc - '1') * 4 + (colc - 'a');
    }
    if (len == 3 && tok[2] == '!') call = 1;
    else if (len == 3 && (give = hexval((unsigned char)tok[2])) < 0) return "not a turn token";
    else if (len > 3) return "not a turn token";
    if (p->hand < 0) return "no piece in hand to place";
    if (p->cell[sq] >= 0) return "the square is occupied";
    p->cell[sq] = p->hand;
    p->hand = -1;
    p->claimable = 0;
    win = completes(p->cell, sq);
    if (call) {
        if (!win) return "false QUARTO! call";
        p->over = 1;
        return NULL;
    }
    if (win && !strict_claims) { /* auto: the placement wins; a piece given with it is ignored, */
        if (give >= 0 && !(p->avail >> give & 1)) return "the given piece is not available"; /* if it exists */
        p->over = 1;
        return NULL;
    }
    if (full(p)) {
        if (give >= 0) return "the board is full: no piece can be given";
        p->over = 1; /* strict: an uncalled last placement is a draw */
        return NULL;
    }
    if (give < 0) return "a piece must be given";
    if (!(p->avail >> give & 1)) return "the given piece is not available";
    p->hand = give;
    p->avail &= ~(1 << give);
    p->claimable = win; /* strict: a missed alignment the opponent may claim next turn */
    return NULL;
}

/* ---- output -------------------------------------------------------------------------------------------- */

static void send(const char *fmt, const char *arg) {
    printf(fmt, arg);
    fputc('\n', stdout);
    fflush(stdout); /* SPEC 3.2: flush after every line, or the arena waits forever */
}

static const char HEX[] = "0123456789abcdef";

/* ---- search ------------------------------------------------------------------------------------------ */

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static long long deadline_ms;  /* the search stops when the clock passes this */
static long long node_limit;   /* and after this many positions (go nodes) */
static long long nodes;
static int aborted;
static unsigned rng_state = 2463534242u;

static unsigned rng(void) { /* xorshift32: shuffles equal turns, so that games differ */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* A turn as the search makes it: place on `sq` (or -1 for a give only), give `give` (or -1), call or claim. */
typedef struct {
    int sq, give, call, claim;
} Turn;

static void turn_text(const Turn *t, char *out) {
    if (t->claim) {
        strcpy(out, "!");
    } else if (t->sq < 0) {
        sprintf(out, "%c", HEX[t->give]);
    } else {
        sprintf(out, "%c%c", 'a' + (t->sq & 3), '1' + (t->sq >> 2));
        if (t->call) strcat(out, "!");
        else if (t->give >= 0) sprintf(out + 2, "%c", HEX[t->give]);
    }
}

/* The turns worth searching: a claim or a winning placement when there is one (it ends the game), else every
 * placement with every give. A completing placement is always called (strict) or played alone (auto), never
 * played with a give: that would only hand the opponent a claim. */
static int gen_turns(Pos *p, Turn *out) {
    int n = 0, s, k;
    if (p->claimable) {
        out[0] = (Turn){-1, -1, 0, 1};
        return 1;
    }
    if (p->hand < 0) {
        for (k = 0; k < 16; k++)
            if (p->avail >> k & 1) out[n++] = (Turn){-1, k, 0, 0};
        return n;
    }
    for (s = 0; s < 16; s++)
        if (p->cell[s] < 0 && wins_with(p, p->hand, s)) {
            out[0] = (Turn){s, -1, strict_claims, 0};
            return 1;
        }
    for (s = 0; s < 16; s++) {
        if (p->cell[s] >= 0) continue;
        if (p->avail == 0) out[n++] = (Turn){s, -1, 0, 0}; /* the last square: nothing left to give */
        for (k = 0; k < 16; k++)
            if (p->avail >> k & 1) out[n++] = (Turn){s, k, 0, 0};
    }
    return n;
}

static void play(Pos *p, const Turn *t) {
    char tok[8];
    turn_text(t, tok);
    apply_turn(p, tok); /* the generator makes legal turns only */
}

/* Negamax with alpha-beta: the score of `p` for the player to move, WIN - ply for a win, 0 for a draw or the
 * horizon. */
static int negamax(Pos *p, int depth, int alpha, int beta, int ply) {
    Turn turns[256];
    int n = gen_turns(p, turns), i, best = -WIN - 1;
    /* A clock read costs far less than a node; a search to depth 2 always ends (see search). */
    if (depth > 1 && (++nodes >= node_limit || now_ms() >= deadline_ms)) aborted = 1;
    if (aborted) return 0;
    for (i = 0; i < n; i++) {
        Pos child = *p;
        int score;
        play(&child, &turns[i]);
        if (child.over) score = (turns[i].claim || turns[i].call || completes(child.cell, turns[i].sq)) ? WIN - ply : 0;
        else score = depth <= 1 ? 0 : -negamax(&child, depth - 1, -beta, -alpha, ply + 1);
        if (score > best) best = score;
        if (best > alpha) alpha = best;
        if (alpha >= beta) break;
    }
    return best;
}

/* The best turn found within the depth, the time and the nodes, deepening one turn at a time. */
static void search(Pos *p, int max_depth, char *out) {
    Turn turns[256], best_turn;
    int n = gen_turns(p, turns), depth, i;
    for (i = n - 1; i > 0; i--) { /* a random order: equal turns differ from game to game */
        int j = (int)(rng() % (unsigned)(i + 1));
        Turn t = turns[i];
        turns[i] = turns[j];
        turns[j] = t;
    }
    best_turn = turns[0];
    nodes = 0;
    aborted = 0;
    for (depth = 1; depth <= max_depth && !aborted; depth++) {
        int alpha = -WIN - 1, best = -WIN - 1, best_i = 0;
        for (i = 0; i < n && !aborted; i++) {
            Pos child = *p;
            int score;
            if (depth > 2 && now_ms() >= deadline_ms) { /* depth 2 always ends: it sees every gift that loses */
                aborted = 1;
                break;
            }
            play(&child, &turns[i]);
            if (child.over) score = (turns[i].claim || turns[i].call || completes(child.cell, turns[i].sq)) ? WIN : 0;
            else score = depth <= 1 ? 0 : -negamax(&child, depth - 1, -WIN - 1, -alpha, 1);
            if (!aborted && score > best) {
                best = score;
                best_i = i;
            }
            if (best > alpha) alpha = best;
        }
        if (aborted) break; /* an unfinished depth is not trusted */
        best_turn = turns[best_i];
        turns[best_i] = turns[0]; /* search the best turn first at the next depth */
        turns[0] = best_turn;
        /* SPEC 5.3: a proved result as win N or loss N (N turns to the end, this one included), else a value. */
        if (best >= WIN - 100 || best <= 100 - WIN) {
            printf("info depth %d score %s %d nodes %lld\n", depth, best > 0 ? "win" : "loss", WIN - abs(best) + 1, nodes);
            break; /* proved: a deeper search cannot change it */
        }
        printf("info depth %d score value 0 nodes %lld\n", depth, nodes);
    }
    turn_text(&best_turn, out);
}

/* ---- commands ------------------------------------------------------------------------------------------ */

static Pos pos;
static int pos_ok;    /* 0 until a valid `position`, and after one that could not be read (SPEC 4.4) */
static char held[8];  /* the turn of a `go infinite`, sent when `stop` comes; empty when none is held */
static int depth_option = DEPTH_DEFAULT;

static void lower(char *s) {
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

static int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* A new session (SPEC 4.1): the handshake, and nothing kept of the last one. */
static void cmd_uqi(void) {
    held[0] = '\0';
    depth_option = DEPTH_DEFAULT;
    set_variant(0, 0xF, 0);
    pos_ok = 0;
    send("id name %s", "My C bot 0.1");
    send("id author %s", "me");
    printf("option name Depth type spin min 1 max %d default %d\n", DEPTH_MAX, DEPTH_DEFAULT);
    send("%s", "uqiok 1");
}

static void cmd_setoption(char **w, int n) {
    char *end;
    long v;
    if (n < 3 || strcmp(w[1], "name") != 0) {
        send("%s", "error setoption needs 'name ID [value VALUE]'");
        return;
    }
    if (!eq_nocase(w[2], "Depth")) { /* option ids are case-insensitive */
        send("error setoption unknown option %s", w[2]);
        return;
    }
    if (n != 5 || strcmp(w[3], "value") != 0) {
        send("%s", "error setoption Depth needs 'value N' with one integer");
        return;
    }
    /* SPEC 4.2: a spin value is digits with an optional '-' (strtol alone would also take "+5" or " 5"). */
    v = isdigit((unsigned char)w[4][0]) ? strtol(w[4], &end, 10) : -1;
    if (v < 1 || *end != '\0' || v > DEPTH_MAX) {
        send("error setoption Depth value %s is not an integer in 1..16", w[4]);
        return;
    }
    depth_option = (int)v; /* success: no reply (SPEC 4.2) */
}

/* Reads a list like "color,fill" (SPEC 4.3): the attribute bits, or -1 when an attribute is empty or named twice
 * (malformed), or -2 when a name is not one of the four (a variant this bot cannot play). */
static int parse_attributes(const char *list) {
    static const char *const names[] = {"color", "shape", "height", "fill"};
    int attrs = 0, k;
    const char *a = list;
    for (;;) {
        size_t len = strcspn(a, ",");
        for (k = 0; k < 4 && !(strlen(names[k]) == len && strncmp(a, names[k], len) == 0); k++) continue;
        if (len == 0 || (k < 4 && attrs >> (3 - k) & 1)) return -1;
        if (k == 4) return -2;
        attrs |= 1 << (3 - k);
        if (a[len] == '\0') return attrs;
        a += len + 1;
    }
}

/* `newgame shapes S attributes A claims C`, the fields in any order (SPEC 4.3). */
static void cmd_newgame(char **w, int n) {
    int i, advanced = -1, attrs = -1, strict = -1;
    for (i = 1; i < n; i += 2) {
        char *key = w[i], *val = i + 1 < n ? w[i + 1] : NULL;
        int k = strcmp(key, "shapes") == 0 ? 0 : strcmp(key, "attributes") == 0 ? 1 : strcmp(key, "claims") == 0 ? 2 : -1;
        if (k < 0) {
            send("error newgame unknown field %s", key);
            return;
        }
        if (val == NULL) {
            send("error newgame %s needs a value", key);
            return;
        }
        if ((k == 0 && advanced != -1) || (k == 1 && attrs != -1) || (k == 2 && strict != -1)) {
            send("error newgame %s given twice", key);
            return;
        }
        lower(val);
        if (k == 0) advanced = strcmp(val, "advanced") == 0 ? 1 : strcmp(val, "standard") == 0 ? 0 : -2;
        else if (k == 2) strict = strcmp(val, "strict") == 0 ? 1 : strcmp(val, "auto") == 0 ? 0 : -2;
        else if ((attrs = parse_attributes(val)) == -1) {
            send("error newgame attributes %s: an attribute is empty or named twice", val);
            return;
        }
    }
    /* A malformed line, or a variant this bot cannot play: an error, and the variant stays as it was. */
    if (advanced == -1 || attrs == -1 || strict == -1) send("%s", "error newgame needs 'shapes S attributes A claims C'");
    else if (advanced == -2 || attrs == -2 || strict == -2) send("%s", "error newgame unsupported variant");
    else {
        set_variant(advanced, attrs, strict);
        pos_ok = 0;
    }
}

/* `position startpos|BOARD HAND [turns ...]`: the whole game, rebuilt every time (SPEC 4.4). */
static void cmd_position(char **w, int n) {
    int i;
    const char *why = NULL;
    pos_ok = 0; /* an invalid position leaves none (SPEC 4.4) */
    if (n >= 2 && strcmp(w[1], "startpos") == 0) { /* a keyword: lower case only */
        pos_start(&pos);
        i = 2;
    } else if (n >= 3) {
        why = parse_position(&pos, w[1], w[2]);
        i = 3;
    } else {
        send("%s", "error position needs 'startpos' or 'BOARD HAND'");
        return;
    }
    if (!why && i < n && strcmp(w[i], "turns") != 0) why = "expected 'turns' after the position";
    for (i++; !why && i < n; i++) {
        lower(w[i]);
        why = apply_turn(&pos, w[i]);
    }
    if (why) {
        send("error position %s", why);
        return;
    }
    pos_ok = 1;
}

/* How loaded the machine is (SPEC 4.5): the last minute's load average per CPU, at least 1. */
static double load_factor(void) {
    double average;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(&average, 1) != 1 || cpus < 1 || average < cpus) return 1.0;
    return average / cpus;
}

/* `go [time MS] [inc MS] [otime MS] [oinc MS] [movestogo N] [movetime MS] [depth N] [nodes N] [infinite]`. */
static void cmd_go(char **w, int n) {
    static const char *const names[] = {"time",     "inc",   "otime", "oinc",    "movestogo",
                                        "movetime", "depth", "nodes", "infinite"};
    long long value[9] = {0};
    long long budget = MAX_SEARCH_MS, empty = 0;
    char turn[8];
    int i, k, s, seen = 0, depth;
    for (i = 1; i < n; i++) {
        const char *v;
        for (k = 0; k < 9 && strcmp(w[i], names[k]) != 0; k++) continue;
        if (k == 9 || seen >> k & 1) {
            send(k == 9 ? "error go unknown limit %s" : "error go %s given twice", w[i]);
            return;
        }
        seen |= 1 << k;
        if (k == 8) continue; /* infinite takes no value */
        v = ++i < n ? w[i] : "";
        if (!*v || v[strspn(v, "0123456789")] != '\0') {
            send("error go %s needs a whole number", names[k]);
            return;
        }
        v += strspn(v, "0");
        if (strlen(v) > 19 || (strlen(v) == 19 && strcmp(v, "9223372036854775807") > 0)) {
            send("error go %s is above 2^63 - 1", names[k]);
            return;
        }
        if (k >= 4 && !*v) { /* movestogo, movetime, depth, nodes */
            send("error go %s needs at least 1", names[k]);
            return;
        }
        value[k] = strlen(v) > 15 ? 999999999999999LL : atoll(v); /* beyond 10^15 is as good as endless */
    }
    if (!pos_ok) {
        send("%s", "error go no valid position to search");
        return;
    }
    if (pos.over) {
        send("%s", "error go the game is over: no turn to play");
        return;
    }
    /* The time to spend (SPEC 4.5): the turn's limit (movetime, or the fair share of the clock: the time left over
     * the turns still to play, plus 3/4 of inc, at most a quarter of the time left; with both, the smaller), less
     * the move overhead kept back for the pipe and a loaded machine (the arena counts both against the bot): 50 ms
     * times the load f, at most f / (1 + f) of the limit (half of it on a machine not loaded beyond its CPUs). */
    for (s = 0; s < 16; s++) empty += pos.cell[s] < 0;
    if (seen & 0x21) {
        long long limit = seen >> 5 & 1 ? value[5] : 0x7fffffffffffffffLL;
        if (seen & 1) {
            long long turns_left = pos.hand >= 0 ? (empty + 1) / 2 : 1 + empty / 2, share;
            if ((seen >> 4 & 1) && value[4] < turns_left) turns_left = value[4];
            share = value[0] / turns_left + value[1] * 3 / 4;
            if (share > value[0] / 4) share = value[0] / 4;
            if (share < limit) limit = share;
        }
        double f = load_factor(), kept = MOVE_OVERHEAD_MS * f;
        if (kept > limit * f / (1 + f)) kept = limit * f / (1 + f);
        budget = limit - (long long)kept;
    }
    if (budget > MAX_SEARCH_MS) budget = MAX_SEARCH_MS;
    deadline_ms = now_ms() + (budget < 1 ? 1 : budget);
    node_limit = seen >> 7 & 1 ? value[7] : 999999999999999LL;
    depth = seen >> 6 & 1 ? (value[6] < DEPTH_MAX ? (int)value[6] : DEPTH_MAX) : depth_option;
    search(&pos, depth, turn);
    if (seen >> 8 & 1) strcpy(held, turn); /* go infinite: the turn waits for stop */
    else send("turn %s", turn);
}

/* Is `s` UTF-8? (SPEC 3.1: every line is; one that is not gets an error line.) */
static int utf8_ok(const unsigned char *s) {
    while (*s) {
        int more = *s < 0x80 ? 0 : *s < 0xC2 ? -1 : *s < 0xE0 ? 1 : *s < 0xF0 ? 2 : *s < 0xF5 ? 3 : -1;
        if (more < 0) return 0; /* a continuation byte first, or a byte no UTF-8 holds */
        for (s++; more > 0; more--, s++)
            if ((*s & 0xC0) != 0x80) return 0;
    }
    return 1;
}

int main(void) {
    static char line[MAX_LINE + 2];
    char *w[MAX_WORDS];
    int n, c;

    setvbuf(stdout, NULL, _IOLBF, 0); /* SPEC 3.2: every line flushed at once */
    rng_state ^= (unsigned)time(NULL);
    set_variant(0, 0xF, 0);
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            /* Longer than SPEC allows (3.1): skip the rest of it, say so once, and carry on. */
            while ((c = getchar()) != EOF && c != '\n') continue;
            send("%s", "error line too long");
            continue;
        }
        if (!utf8_ok((const unsigned char *)line)) {
            send("%s", "error line is not UTF-8"); /* SPEC 3.1; its bytes are never echoed */
            continue;
        }
        n = 0;
        for (char *t = strtok(line, " \t\r\n"); t && n < MAX_WORDS; t = strtok(NULL, " \t\r\n")) w[n++] = t;
        if (n == 0) continue; /* empty lines are ignored */
        if (n > 1 && (strcmp(w[0], "isready") == 0 || strcmp(w[0], "stop") == 0 || strcmp(w[0], "quit") == 0)) {
            send("error %s takes no arguments", w[0]); /* SPEC 4.9: a word too many makes a command malformed */
            continue;
        }
        if (strcmp(w[0], "uqi") == 0) {
            if (n > 2 || (n == 2 && (w[1][strspn(w[1], "0123456789")] != '\0' || strspn(w[1], "0") == strlen(w[1]))))
                send("%s", "error uqi takes one version number, at least 1");
            else
                cmd_uqi();
        } else if (strcmp(w[0], "isready") == 0) {
            send("%s", "readyok");
        } else if (strcmp(w[0], "stop") == 0) {
            if (held[0]) send("turn %s", held); /* otherwise no search runs: nothing to stop (SPEC 4.6) */
            held[0] = '\0';
        } else if (strcmp(w[0], "quit") == 0) {
            return 0;
        } else if (held[0] && (strcmp(w[0], "setoption") == 0 || strcmp(w[0], "newgame") == 0 ||
                               strcmp(w[0], "position") == 0 || strcmp(w[0], "go") == 0)) {
            send("error %s a search is running (send stop first)", w[0]);
        } else if (strcmp(w[0], "setoption") == 0) {
            cmd_setoption(w, n);
        } else if (strcmp(w[0], "newgame") == 0) {
            cmd_newgame(w, n);
        } else if (strcmp(w[0], "position") == 0) {
            cmd_position(w, n);
        } else if (strcmp(w[0], "go") == 0) {
            cmd_go(w, n);
        } else {
            send("error unknown command %s", w[0]);
        }
    }
    return 0; /* end of input: exit (SPEC 3.2) */
}
