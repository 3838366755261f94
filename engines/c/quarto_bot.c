/*
 * quarto_bot.c - a greedy Quarto engine speaking UQI version 1 over stdin/stdout.
 *
 * Written from SPEC.md alone, as an example for bot authors. One file, libc only:
 *
 *     cc -O2 -o quarto_bot quarto_bot.c
 *     ./quarto_bot
 *
 * Play: it wins when it can (a winning placement, a QUARTO! call, or the claim of a missed alignment), never
 * gives a piece that lets the opponent win at once when a safe turn exists, and otherwise plays at random.
 * It answers every `go` at once, whatever the limits, so it doubles as the "instant bot" that measures the
 * arena's own overhead per turn.
 *
 * Why one thread is enough: UQI asks for `readyok` and `stop` to be handled even during a search. This engine
 * finishes every search before it reads the next line, so `isready` is answered at once and `stop` has nothing
 * to stop (it is ignored, as the spec says). The one exception is `go infinite`: SPEC 4.5 asks for its turn
 * only after `stop`, so the bot computes it at once and holds it until then; while it holds a turn it is
 * "searching", and refuses `position`, `go`, `newgame` and `setoption` (SPEC 4.10).
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LINE 4096 /* SPEC 3.1: no line is longer than this many bytes */
#define MAX_WORDS 600 /* a game has at most 17 turns; a longer line is cut off harmlessly */
#define SEED_MAX 2147483647L

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

static Pos pos;
static int pos_ok = 1; /* 0 after a `position` command that could not be read */
static char held[8];   /* the turn of a `go infinite`, sent when `stop` comes; empty when none is held */

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

/* The pieces that would win at once for the player who places next: bit k is set when piece k, put on some empty
 * square, completes a group. Only a group with exactly one empty square can be completed, by a piece that shares
 * a counted attribute with its three pieces; one pass over the groups answers for all 16 pieces at once, which
 * keeps a `go` in the microseconds (this bot measures the arena's overhead, so its own time must be small). */
static int winning_pieces(const int cell[16]) {
    int i, j, k, wins = 0;
    for (i = 0; i < nlines; i++) {
        int all = 0xF, none = 0xF, empty = 0;
        for (j = 0; j < 4 && empty < 2; j++) {
            int v = cell[line_sq[i][j]];
            if (v < 0) {
                empty++;
            } else {
                all &= v;
                none &= ~v;
            }
        }
        if (empty != 1) continue;
        all &= attr_mask;
        none &= attr_mask;
        for (k = 0; k < 16; k++)
            if ((k & all) | (~k & none)) wins |= 1 << k;
    }
    return wins;
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

/* ---- randomness (xorshift64*, seeded by the Seed option) ----------------------------------------------- */

static unsigned long long rng_state = 88172645463325252ULL;

static void rng_seed(unsigned long long seed) {
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    if (rng_state == 0) rng_state = 1;
}

static int rng_below(int n) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (int)((rng_state * 0x2545F4914F6CDD1DULL >> 33) % (unsigned long long)n);
}

/* ---- output -------------------------------------------------------------------------------------------- */

static void send(const char *fmt, const char *arg) {
    printf(fmt, arg);
    fputc('\n', stdout);
    fflush(stdout); /* SPEC 3.2: flush after every line, or the arena waits forever */
}

static const char HEX[] = "0123456789abcdef";

/* ---- search: greedy ------------------------------------------------------------------------------------ */

static void choose_turn(char *out) {
    Pos *p = &pos;
    int cand[256], n = 0, s, k, wins;
    if (p->claimable) { /* strict: the opponent left an alignment uncalled; claiming it wins */
        strcpy(out, "!");
        return;
    }
    if (p->hand < 0) { /* give only: a piece with no winning square, if there is one */
        wins = winning_pieces(p->cell);
        for (k = 0; k < 16; k++)
            if ((p->avail >> k & 1) && !(wins >> k & 1)) cand[n++] = k;
        if (n == 0)
            for (k = 0; k < 16; k++)
                if (p->avail >> k & 1) cand[n++] = k;
        out[0] = HEX[cand[rng_below(n)]];
        out[1] = '\0';
        return;
    }
    for (s = 0; s < 16; s++)
        if (p->cell[s] < 0 && wins_with(p, p->hand, s)) cand[n++] = s;
    if (n > 0) { /* a winning placement: alone (auto) or called (strict) */
        s = cand[rng_below(n)];
        sprintf(out, "%c%c%s", 'a' + (s & 3), '1' + (s >> 2), strict_claims ? "!" : "");
        return;
    }
    if (p->avail == 0) { /* the last empty square: the placement fills the board, nothing to give */
        for (s = 0; s < 16 && p->cell[s] >= 0; s++) continue;
        sprintf(out, "%c%c", 'a' + (s & 3), '1' + (s >> 2));
        return;
    }
    /* Place and give: first every pair whose gift leaves the opponent no winning square, else any pair. */
    for (s = 0; s < 16; s++) {
        if (p->cell[s] >= 0) continue;
        p->cell[s] = p->hand;
        wins = winning_pieces(p->cell);
        for (k = 0; k < 16; k++)
            if ((p->avail >> k & 1) && !(wins >> k & 1)) cand[n++] = s * 16 + k;
        p->cell[s] = -1;
    }
    if (n == 0)
        for (s = 0; s < 16; s++)
            for (k = 0; k < 16; k++)
                if (p->cell[s] < 0 && (p->avail >> k & 1)) cand[n++] = s * 16 + k;
    k = cand[rng_below(n)];
    s = k / 16;
    sprintf(out, "%c%c%c", 'a' + (s & 3), '1' + (s >> 2), HEX[k % 16]);
}

/* ---- commands ------------------------------------------------------------------------------------------ */

static void lower(char *s) {
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

static void cmd_uqi(void) {
    send("id name %s", "Greedy C 1.0");
    send("id author %s", "quarto-arena");
    send("%s", "option name Seed type spin min 0 max 2147483647 default 0");
    send("%s", "uqiok 1");
}

static int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

static void cmd_setoption(char **w, int n) {
    char *end;
    long v;
    if (n < 3 || strcmp(w[1], "name") != 0) {
        send("%s", "error setoption needs 'name ID [value VALUE]'");
        return;
    }
    if (!eq_nocase(w[2], "Seed")) { /* option ids are case-insensitive */
        send("error setoption unknown option %s", w[2]);
        return;
    }
    if (n != 5 || strcmp(w[3], "value") != 0) {
        send("%s", "error setoption Seed needs 'value N' with one integer");
        return;
    }
    /* SPEC 4.2: a spin value is digits with an optional '-' (strtol alone would also take "+5" or " 5"). */
    v = isdigit((unsigned char)w[4][0]) ? strtol(w[4], &end, 10) : -1;
    if (v < 0 || *end != '\0' || v > SEED_MAX) {
        send("error setoption Seed value %s is not an integer in 0..2147483647", w[4]);
        return;
    }
    rng_seed((unsigned long long)v);
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

static void cmd_newgame(char **w, int n) {
    int i, advanced = -1, attrs = -1, strict = -1;
    const char *attr_text = "";
    for (i = 1; i < n; i += 2) {
        char *key = w[i], *val = i + 1 < n ? w[i + 1] : NULL;
        int known = strcmp(key, "shapes") == 0 || strcmp(key, "attributes") == 0 || strcmp(key, "claims") == 0;
        if (!known) {
            send("error newgame unknown field %s", key);
            return;
        }
        if (val == NULL) {
            send("error newgame %s needs a value", key);
            return;
        }
        lower(val);
        if ((key[0] == 's' && advanced != -1) || (key[0] == 'a' && attrs != -1) || (key[0] == 'c' && strict != -1)) {
            send("error newgame %s given twice", key);
            return;
        }
        if (key[0] == 's') advanced = strcmp(val, "advanced") == 0 ? 1 : strcmp(val, "standard") == 0 ? 0 : -2;
        else if (key[0] == 'c') strict = strcmp(val, "strict") == 0 ? 1 : strcmp(val, "auto") == 0 ? 0 : -2;
        else {
            attr_text = val;
            attrs = parse_attributes(val);
        }
    }
    /* A malformed line, or a variant this bot cannot play: an error, and the variant stays as it was. */
    if (advanced == -1 || attrs == -1 || strict == -1) {
        if (attrs == -1 && *attr_text)
            send("error newgame attributes %s: an attribute is empty or named twice", attr_text);
        else
            send("%s", "error newgame needs 'shapes S attributes A claims C'");
    } else if (advanced == -2) {
        send("%s", "error newgame unsupported shapes: expected standard or advanced");
    } else if (attrs == -2) {
        send("%s", "error newgame unsupported attributes: expected color, shape, height, fill");
    } else if (strict == -2) {
        send("%s", "error newgame unsupported claims: expected auto or strict");
    } else {
        set_variant(advanced, attrs, strict);
        pos_start(&pos);
        pos_ok = 1;
    }
}

static void cmd_position(char **w, int n) {
    int i;
    const char *why = NULL;
    char msg[200];
    pos_ok = 0;
    if (n >= 2 && strcmp(w[1], "startpos") == 0) { /* a keyword: lower case only (SPEC 2.3) */
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
        if (why) {
            sprintf(msg, "error position turn %.8s: %s", w[i], why);
            send("%s", msg);
            return;
        }
    }
    if (why) {
        sprintf(msg, "error position %s", why);
        send("%s", msg);
        return;
    }
    pos_ok = 1;
}

static void cmd_go(char **w, int n) {
    static const char *const limits[] = {"time",     "inc",   "otime", "oinc",    "movestogo",
                                         "movetime", "depth", "nodes", "infinite"};
    char turn[8];
    int i, k, seen = 0;
    /* The limits do not matter, since the answer is instant; but a malformed go is refused (SPEC 4.5): an unknown
     * or repeated limit, or a value that is not digits (at least 1 for movestogo, movetime, depth and nodes). */
    for (i = 1; i < n; i++) {
        const char *v;
        for (k = 0; k < 9 && strcmp(w[i], limits[k]) != 0; k++) continue;
        if (k == 9 || seen >> k & 1) {
            send(k == 9 ? "error go unknown limit %s" : "error go %s given twice", w[i]);
            return;
        }
        seen |= 1 << k;
        if (k == 8) continue; /* infinite takes no value */
        v = ++i < n ? w[i] : "";
        if (!*v || v[strspn(v, "0123456789")] != '\0') {
            send("error go %s needs a whole number", limits[k]);
            return;
        }
        v += strspn(v, "0");
        if (strlen(v) > 19 || (strlen(v) == 19 && strcmp(v, "9223372036854775807") > 0)) {
            send("error go %s is above 2^63 - 1", limits[k]); /* SPEC 4.5 */
            return;
        }
        if (k >= 4 && !*v) { /* movestogo, movetime, depth, nodes */
            send("error go %s needs at least 1", limits[k]);
            return;
        }
    }
    if (!pos_ok) {
        send("%s", "error go the last position was invalid");
        return;
    }
    if (pos.over) {
        send("%s", "error go the game is over: no turn to play");
        return;
    }
    choose_turn(turn);
    if (seen >> 8 & 1) strcpy(held, turn); /* go infinite: the turn waits for stop */
    else send("turn %s", turn);
}

/* Is `v` a protocol version: digits only, at least 1 (SPEC 4.1)? */
static int version_ok(const char *v) {
    return v[strspn(v, "0123456789")] == '\0' && strspn(v, "0") < strlen(v);
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

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Seed 0 (the default) plays a different game every run; setoption Seed makes it repeatable. */
    rng_seed((unsigned long long)time(NULL) ^ (unsigned long long)clock() << 32 ^
             (unsigned long long)(size_t)&n);
    set_variant(0, 0xF, 0);
    pos_start(&pos);

    while (fgets(line, sizeof line, stdin)) {
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            /* Longer than SPEC allows: skip the rest of it and say so instead of reading it as two lines. */
            while ((c = getchar()) != EOF && c != '\n') continue;
            send("error line longer than %s bytes", "4096");
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
        } else if (strcmp(w[0], "uqi") == 0 && (n > 2 || (n == 2 && !version_ok(w[1])))) {
            send("%s", "error uqi takes one version number, at least 1"); /* SPEC 4.1 */
        } else if (strcmp(w[0], "uqi") == 0) {
            held[0] = '\0'; /* a new session abandons a held search without its turn (SPEC 4.10) */
            /* A new session keeps nothing of the last (SPEC 4.1): the standard game, no position. The Seed option
             * needs no reset: its default, 0, only means "seed from the clock", which this process has done. */
            set_variant(0, 0xF, 0);
            pos_ok = 0;
            cmd_uqi();
        } else if (strcmp(w[0], "isready") == 0) {
            send("%s", "readyok");
        } else if (strcmp(w[0], "stop") == 0) {
            if (held[0]) send("turn %s", held); /* otherwise the search already ended: nothing to stop */
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
    return 0; /* end of input: SPEC 3.2 says exit */
}
