/* The exact Quarto solver core: quarto_arena.protocol._solver (pure-Python mirror: _solver_py.py).
 *
 * A node is a position with a piece in hand; the player to move places it and gives one of the pieces left.
 * Scores are those of the player to move: a win scores the number of empty squares left at the end of the game
 * plus one, a loss minus that, a draw 0. So a sooner win scores more, a later loss less badly, and a parent's score
 * is minus its child's (the count is of the board, not of the path).
 *
 * The search is fail-soft negamax alpha-beta, optionally limited to a depth in turns: a node that far away scores
 * 0, as a draw (a horizon); with the depth at the empty squares nothing is cut and the score is exact. At each
 * node, in order:
 *   - a win at once: the piece in hand completes a winning group (a piece "wins" on a board when some group holds
 *     three pieces that share a counted attribute value with it); below the root this never happens;
 *   - two or three empty squares, below the root and within the depth: the exact score in closed form (see
 *     endgame); four to six: the exact score (fail-soft) by a bare loop over the turns, the replies likewise down
 *     to three (small4 to small6), which costs less than the search's own work at a node that small;
 *   - the last empty square, or no group left that can still be won (each group is full, or mixed on every
 *     counted attribute, or fewer pieces are left with its common attribute than it has empty squares): a draw;
 *     then the horizon;
 *   - bounds: without a win now, the best is a win on the next own placement, the worst a loss on the opponent's;
 *   - the transposition table, keyed by a canonical image of the node under the variant's symmetry group;
 *   - the turns: each empty square, then each piece that does not let the opponent win at once (safe-give
 *     pruning: an unsafe piece loses on the next placement, as badly as a loss can be, so it is tried only as the
 *     value of a square where every piece is unsafe). Empty squares on no live group are interchangeable, and so
 *     are pieces that agree on every attribute a live group depends on: one of each is tried. From ORDER_MIN
 *     empty squares on, the turns are tried in order of the opponent's mobility (its turns that do not lose at
 *     once: fewest first; at the root of a win proof, see WIN_ORDER_DEADLY), after the table's best turn.
 *
 * Per node, a summary of the groups (pieces in each, the attribute bits they all have or all lack) is passed to the
 * children, so that the pieces that win after one or two more placements are a few table look-ups away; a node that
 * orders its turns has derived each child's summary and threats already, and hands them over.
 *
 * The canonical image: the board maps that give the least occupied mask; for each, every attribute plane is
 * complemented when that makes it less (on an empty board, when that clears the bit of the piece in hand), then
 * the counted planes are sorted among themselves, and the others among themselves; the least such image wins.
 * Every step is an element of the group, so equal keys mean symmetric positions, hence equal values. The best turn
 * stored with a node is mapped into the image's frame and back through that symmetry.
 *
 * The transposition table holds, in two-entry buckets, the key, the lower and upper bound on the score, the depth
 * they were searched to and the best turn. Bounds from a shallower search serve a deeper one only where they are
 * proofs (a win or a loss within fewer turns is one within more). Every choice here -- turn order, table layout,
 * hash, replacement -- is mirrored by _solver_py.py, so both cores search the same tree and count the same nodes.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where GCC can choose a function's body when the module loads (ifunc: glibc on x86-64), the search's functions are
 * compiled twice, for x86-64-v3 (popcnt, BMI1/2, AVX2: about a tenth less time per node, benchmarks/solver_core.py)
 * and for the baseline, and each CPU runs the one it supports; a clone calls the other functions' same clone
 * directly. Elsewhere (clang, other architectures, musl, or a build for v3 already) they are compiled once. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__GLIBC__) &&      \
    !defined(__AVX2__)
#define DISPATCHING 1
#define DISPATCHED __attribute__((target_clones("arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define DISPATCHING 0
#define DISPATCHED
#endif

#define BIG 64
/* Below this the table costs more than it saves: a probe is a cache miss, and a node of 7 empty squares has only
 * small6's children below it (benchmarks/solver_core.py and benchmarks/solver.py: from 8 rather than 7, 7-10% less
 * CPU for the same answers at 10-12 empty squares, in analyse's work, perfect's proofs and the advanced variant). */
#define TT_MIN_EMPTY 8
/* Under a node cap the table starts at 7 empty squares, as it did when perfect's levels were calibrated: a level's
 * strength rests on what its node cap reaches (test_perfect's tripwire). */
#define TT_MIN_EMPTY_CAPPED 7
#define ORDER_MIN 7
/* At the root of a search with win_order (solver.py asks for it in win proofs without a node limit), a turn's key is
 * the opponent's mobility plus this much per piece left that already wins somewhere after the placement. Mobility
 * counts such a piece unsafe on nearly every square, about -9 at 12 empty squares, so this weighs it about half.
 * Chosen on 40 won 12-empty positions of seed 2 (each root turn proven alone: 3 to 7 gave 0.87-0.95 of the nodes
 * before the first winning turn, 8 and more did worse than mobility alone). Safety then win proof, fresh table,
 * benchmarks/root_order.py: seed 2 0.87 of the nodes, seed 3 0.90 (24 positions), seed 1, the conversion
 * benchmark's, 0.955 (20): fewer in all, but not at every position. */
#define WIN_ORDER_DEADLY 5
#define CHECK_EVERY 64
#define EXACT 64 /* a depth no game can reach: the search is exact */
#define MAX_LINES 32
#define MAX_MAPS 64

typedef struct {
    uint64_t planes;
    uint16_t occupied;
    uint8_t hand1; /* hand + 1; 0 marks an empty slot */
    int8_t low;
    int8_t high;
    uint8_t depth;    /* turns searched below the node, at most its empty squares (then the bounds are exact) */
    uint8_t move;     /* the best turn found, square << 4 | piece, in the canonical image's frame */
    uint8_t has_move;
} Entry;

/* A canonical image of a node, and the symmetry that maps the node onto it. */
typedef struct {
    uint16_t occupied;
    uint64_t planes;
    int hand;
    int map;        /* the board map */
    int target[4];  /* attribute plane a goes to plane target[a] ... */
    unsigned flip;  /* ... after complementing the planes whose bit is set here */
} Key;

typedef struct {
    PyObject_HEAD
    int nlines;
    uint16_t lines[MAX_LINES];
    int nthrough[16];
    uint8_t through[16][MAX_LINES]; /* the groups through each square */
    uint32_t through_mask[16];      /* the same, a bit each */
    int ncounted, counted[4];
    int nothers, others[4];
    int nmaps;
    /* images[(half * 256 + byte) * map_stride + i]: the squares board map i sends the byte's squares to (half 0 the
     * squares 0-7, half 1 the squares 8-15), the maps side by side, so that one byte's images under every map
     * are one or two cache lines and the loop over the maps is a vector one. */
    int map_stride;
    uint16_t *images;
    uint8_t (*maps)[2][16]; /* each board map and its inverse, square by square */
    int bits;
    Entry *tt;
    /* the running search */
    unsigned long long nodes;
    unsigned long long max_nodes;
    double deadline;
    volatile int stopped;
    int aborted;
    int best_move;
    int busy;
    int win_order; /* the root orders its turns for a win proof (WIN_ORDER_DEADLY) */
    int listing;   /* root_turns: the root lists its turns, in the order it would try them, instead of searching */
    int nlisted;
    int listed[256];
} Core;

static uint16_t HAS[4], HAS_NOT[4];
static uint64_t PIECE_PLANES[16][16];
/* WINNERS[set << 4 | clear]: the pieces that complete a group of three whose pieces all have the attribute bits
 * `set` and all lack the bits `clear`. */
static uint16_t WINNERS[256];
/* PIECE_SC[p]: p's attribute bits over their complement (see Groups.sc). */
static uint8_t PIECE_SC[16];

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A portable x86-64 build cannot assume the popcnt instruction, and the library call costs more than this. Where
 * the search is compiled per instruction set (DISPATCHED), the library call is left to the baseline clone, which
 * only CPUs without popcnt (before 2008) run. */
static inline int popcount16(unsigned x) {
#if DISPATCHING || defined(__POPCNT__) || defined(__aarch64__)
    return __builtin_popcount(x);
#else
    x = x - ((x >> 1) & 0x5555u);
    x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
    x = (x + (x >> 4)) & 0x0F0Fu;
    return (int)((x + (x >> 8)) & 0x1Fu);
#endif
}
static inline int lowest(unsigned x) { return __builtin_ctz(x); }

static int piece_at(uint64_t planes, int square) {
    uint64_t p = planes >> square;
    return (int)((p & 1) | (p >> 15 & 2) | (p >> 30 & 4) | (p >> 45 & 8));
}

/* What the search needs to know of each winning group of a board. */
typedef struct {
    unsigned threes;              /* the groups holding exactly three pieces */
    unsigned twos;                /* the groups holding exactly two */
    unsigned where;               /* the empty squares some group of three waits on */
    /* at[s]: the pieces that complete a group of three on the empty square s (0 on the others). A placement only
     * adds to the other squares' (a group of two becomes one of three), so it is kept here rather than derived
     * again at each node. */
    uint16_t at[16];
    /* pair[s]: per empty square, the union of the sc of the groups of two through it; the pieces that complete one
     * of them after p is placed on s are WINNERS[pair[s] & PIECE_SC[p]]. */
    uint8_t pair[16];
    uint8_t count[MAX_LINES];     /* pieces in the group */
    /* The counted attribute bits every piece in it has (all of them when it is empty), shifted left by four, over
     * those no piece in it has (likewise): a piece p keeps of them sc & PIECE_SC[p], and WINNERS[sc] are the
     * pieces that complete the group when it holds three. WINNERS is a union over the bits (WINNERS[x | y] =
     * WINNERS[x] | WINNERS[y]), so the winners of several groups are one look-up of their bits' union. */
    uint8_t sc[MAX_LINES];
} Groups;

/* The threats on a board, derived from its Groups at each node. */
typedef struct {
    unsigned all;     /* the pieces that win somewhere */
    unsigned multi;   /* those that win on two squares or more */
} Threats;

static void summarize(const Core *c, unsigned occupied, uint64_t planes, Groups *g) {
    g->threes = g->twos = g->where = 0;
    memset(g->at, 0, sizeof g->at);
    memset(g->pair, 0, sizeof g->pair);
    for (int i = 0; i < c->nlines; i++) {
        unsigned m = c->lines[i];
        unsigned x = occupied & m;
        unsigned set = 0, clear = 0;
        for (int j = 0; j < c->ncounted; j++) {
            int a = c->counted[j];
            unsigned y = (unsigned)(planes >> (16 * a)) & m;
            if (y == x)
                set |= 1u << a;
            if (y == 0)
                clear |= 1u << a;
        }
        int k = popcount16(x);
        g->count[i] = (uint8_t)k;
        g->sc[i] = (uint8_t)(set << 4 | clear);
        if (k == 3) {
            int s = lowest(m & ~occupied);
            g->threes |= 1u << i;
            g->at[s] |= WINNERS[g->sc[i]];
            g->where |= 1u << s;
        } else if (k == 2) {
            unsigned open = m & ~occupied;
            g->twos |= 1u << i;
            g->pair[lowest(open)] |= g->sc[i];
            g->pair[lowest(open & (open - 1))] |= g->sc[i];
        }
    }
}

/* The groups after `piece` is placed on the empty `square` of the board `occupied`. */
DISPATCHED
static void place(const Core *c, const Groups *g, unsigned occupied, int square, int piece, Groups *out) {
    *out = *g;
    unsigned occupied2 = occupied | 1u << square;
    unsigned left = 0; /* the squares a group of two through `square` now waits on alone */
    for (int j = 0; j < c->nthrough[square]; j++) {
        int i = c->through[square][j];
        int k = ++out->count[i];
        unsigned sc = out->sc[i] &= PIECE_SC[piece];
        unsigned open = c->lines[i] & ~occupied2;
        if (k == 2) {
            out->twos |= 1u << i;
            out->pair[lowest(open)] |= (uint8_t)sc;
            out->pair[lowest(open & (open - 1))] |= (uint8_t)sc;
        } else if (k == 3) {
            int s = lowest(open);
            out->twos &= ~(1u << i);
            out->threes |= 1u << i;
            out->at[s] |= WINNERS[sc];
            out->where |= 1u << s;
            left |= 1u << s;
        } else if (k == 4) {
            out->threes &= ~(1u << i);
        }
    }
    /* A union cannot forget a group: where a group of two became one of three, it is made again. */
    for (; left; left &= left - 1) {
        int s = lowest(left);
        unsigned pair = 0;
        for (unsigned t = c->through_mask[s] & out->twos; t; t &= t - 1)
            pair |= out->sc[lowest(t)];
        out->pair[s] = (uint8_t)pair;
    }
    out->at[square] = 0;
    out->pair[square] = 0;
    out->where &= ~(1u << square);
}

/* Fills *t from the board's groups; returns the pieces that win anywhere. */
DISPATCHED
static unsigned threats(const Groups *g, Threats *t) {
    unsigned all = 0, multi = 0;
    for (unsigned x = g->where; x; x &= x - 1) {
        unsigned w = g->at[lowest(x)];
        multi |= all & w;
        all |= w;
    }
    t->all = all;
    t->multi = multi;
    return all;
}

/* The pieces that win somewhere on the board other than on square s (so, after a placement on s, at a group not
 * through s): a piece wins elsewhere unless it wins at s alone. */
static inline unsigned except_at(const Groups *g, const Threats *t, int s) {
    return t->all & ~(g->at[s] & ~t->multi);
}

/* The pieces that win on the board after `piece` is placed on the empty `square`: those that win elsewhere, and
 * those that complete a group of two through the square (one look-up for all of them, see Groups.sc). */
static inline unsigned winners_after(const Groups *g, const Threats *t, int square, int piece) {
    return except_at(g, t, square) | WINNERS[g->pair[square] & PIECE_SC[piece]];
}

/* The opponent's turns after a placement that do not lose at once, for each gift: the pieces that win on a free
 * square after the opponent places the gift there come from groups through other squares (fixed by the placement)
 * and from groups through that square holding two pieces (they depend on the gift). */
typedef struct {
    int nfree;
    uint16_t fixed[16]; /* per free square: the winners from groups not through it */
    uint8_t pair[16];   /* ... and the union of the sc of the groups of two through it */
} Mobility;

/* `after` and `threats_after` describe the board after the placement (the child's groups and threats, which the
 * search then hands to the child rather than derive them again). */
DISPATCHED
static void mobility_setup(const Groups *after, const Threats *threats_after, unsigned occupied2, Mobility *m) {
    m->nfree = 0;
    for (unsigned f = 0xFFFFu & ~occupied2; f; f &= f - 1) {
        int s = lowest(f);
        m->fixed[m->nfree] = (uint16_t)except_at(after, threats_after, s);
        m->pair[m->nfree++] = after->pair[s];
    }
}

DISPATCHED
static int mobility(const Mobility *m, unsigned rest, int piece) {
    unsigned keep = PIECE_SC[piece];
    int total = 0;
    for (int k = 0; k < m->nfree; k++)
        total += popcount16(rest & ~(m->fixed[k] | WINNERS[m->pair[k] & keep]));
    return total;
}

/* The groups that can still be won (not full, and enough pieces left share an attribute value with the pieces in
 * it), a bit each; *attributes receives the attribute bits those groups depend on. */
DISPATCHED
static unsigned live_lines(const Core *c, const Groups *g, unsigned remaining, unsigned *attributes) {
    /* enough_set[k]: the attribute bits at least k pieces left have; enough_clear[k]: at least k lack. */
    unsigned enough_set[5] = {0}, enough_clear[5] = {0};
    for (int j = 0; j < c->ncounted; j++) {
        int a = c->counted[j];
        int with = popcount16(remaining & HAS[a]), without = popcount16(remaining & HAS_NOT[a]);
        for (int k = 1; k <= 4; k++) {
            if (with >= k)
                enough_set[k] |= 1u << a;
            if (without >= k)
                enough_clear[k] |= 1u << a;
        }
    }
    unsigned out = 0, attrs = 0;
    for (int i = 0; i < c->nlines; i++) {
        int need = 4 - g->count[i];
        if (need == 0)
            continue;
        unsigned here = g->sc[i] & (enough_set[need] << 4 | enough_clear[need]);
        if (here) {
            out |= 1u << i;
            attrs |= here >> 4 | (here & 15);
        }
    }
    *attributes = attrs;
    return out;
}

/* What the closed form at three empty squares needs of the board, whatever the piece in hand: per empty square
 * (ascending), the winners from groups not through it and the union of the sc of the groups of two through it (see
 * winners_after), the winners of the groups of three waiting on it, and the sc of the groups of two that miss it
 * (their empty squares are the two others); and the sc of a group through all three. */
typedef struct {
    uint16_t except[3];
    uint16_t at[3];
    uint8_t pair[3];
    uint8_t missing[3];
    unsigned through_all;
} Three;

static inline void three_setup(const Core *c, const Groups *g, const Threats *th, unsigned occupied, Three *t) {
    unsigned free_squares = 0xFFFFu & ~occupied;
    int square[3];
    unsigned f = free_squares;
    for (int k = 0; k < 3; k++, f &= f - 1) {
        int s = lowest(f);
        square[k] = s;
        t->except[k] = (uint16_t)except_at(g, th, s);
        t->at[k] = g->at[s];
        t->pair[k] = g->pair[s];
        t->missing[k] = 0;
    }
    for (unsigned x = g->twos; x; x &= x - 1) {
        int i = lowest(x);
        unsigned missed = free_squares & ~c->lines[i];
        t->missing[missed == 1u << square[0] ? 0 : missed == 1u << square[1] ? 1 : 2] |= g->sc[i];
    }
    t->through_all = 0;
    for (unsigned x = c->through_mask[square[0]] & ~(g->twos | g->threes); x; x &= x - 1) {
        int i = lowest(x);
        if ((c->lines[i] & free_squares) == free_squares)
            t->through_all |= g->sc[i];
    }
}

/* The exact score at three empty squares (see endgame). We place the piece in hand on square k and give `piece`,
 * the opponent places it on square r, and the last piece then wins, if anywhere, on the last square u, where every
 * group is full by then: a group of three waiting on u; a group of two through u and k (it misses r) with the piece
 * in hand, or through u and r (it misses k) with `piece`; and a group through all three, with both. */
static inline int endgame3(const Three *t, int hand, unsigned avail) {
    static const uint8_t OTHER[3][2] = {{1, 2}, {0, 2}, {0, 1}};
    int best = -2;
    unsigned by_hand = PIECE_SC[hand];
    for (int k = 0; k < 3; k++) {
        unsigned safe = avail & ~(t->except[k] | WINNERS[t->pair[k] & by_hand]);
        for (; safe; safe &= safe - 1) {
            int piece = lowest(safe);
            unsigned last = (unsigned)lowest(avail & ~(1u << piece)); /* the one piece left */
            unsigned by_piece = PIECE_SC[piece], by_last = PIECE_SC[last];
            unsigned both = t->through_all & by_hand & by_piece;
            int holds = 0;
            for (int j = 0; j < 2 && !holds; j++) {
                int r = OTHER[k][j], u = OTHER[k][1 - j];
                unsigned x = (t->missing[r] & by_hand) | (t->missing[k] & by_piece) | both;
                holds = !(t->at[u] >> last & 1) && !(x & by_last);
            }
            if (!holds)
                return 1;
            best = 0;
        }
    }
    return best;
}

/* The exact score of a node below the root with two or three empty squares, without visiting its children (they
 * are a third of all nodes). Below the root the piece in hand never wins, so at two empty squares a safe gift
 * draws: the last piece goes on the last square and wins nothing. At three, the opponent then holds the draw when
 * it has a square where the last piece is safe, and else loses on our next placement (endgame3). */
static int endgame(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand, unsigned avail,
                   int empty) {
    if (empty == 2) {
        for (unsigned f = 0xFFFFu & ~occupied; f; f &= f - 1)
            if (avail & ~winners_after(g, th, lowest(f), hand))
                return 0;
        return -1;
    }
    Three t;
    three_setup(c, g, th, occupied, &t);
    return endgame3(&t, hand, avail);
}

static int small4(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand,
                  unsigned avail, int alpha, int beta);
static int small5(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand,
                  unsigned avail, int alpha, int beta);

/* The exact score of a node below the root with four to six empty squares, its children unvisited, fail-soft:
 * every placement of the piece in hand and every safe gift in board order, until a score reaches beta or the most
 * the node can score (a win on the next own placement). From five, each reply is scored likewise within (-beta,
 * -max(alpha, best)); at four, each reply is the closed form at three, whose window does not matter. Without the
 * per-node work of the search (table, ordering, live groups) these levels cost less (instructions under callgrind),
 * though they try interchangeable turns the search would merge. The mirror's _small. One body, compiled once per
 * number of empty squares (small4 to small6): with `empty` a constant, the compiler calls the next level directly
 * (one recursive function executed 3% more instructions). */
static inline __attribute__((always_inline)) int small(const Core *c, const Groups *g, const Threats *th,
                                                       unsigned occupied, int hand, unsigned avail, const int empty,
                                                       int alpha, int beta) {
    int best = 1 - empty;
    for (unsigned f = 0xFFFFu & ~occupied; f; f &= f - 1) {
        int square = lowest(f);
        unsigned safe = avail & ~winners_after(g, th, square, hand);
        if (!safe)
            continue;
        Groups after;
        Threats threats_after;
        unsigned occupied2 = occupied | 1u << square;
        place(c, g, occupied, square, hand, &after);
        threats(&after, &threats_after);
        Three three;
        if (empty == 4)
            three_setup(c, &after, &threats_after, occupied2, &three);
        for (unsigned t = safe; t; t &= t - 1) {
            int piece = lowest(t);
            unsigned rest = avail & ~(1u << piece);
            int a = alpha > best ? alpha : best;
            int score = empty == 4   ? -endgame3(&three, piece, rest)
                        : empty == 5 ? -small4(c, &after, &threats_after, occupied2, piece, rest, -beta, -a)
                                     : -small5(c, &after, &threats_after, occupied2, piece, rest, -beta, -a);
            if (score > best) {
                best = score;
                if (best >= beta || best == empty - 2)
                    return best;
            }
        }
    }
    return best;
}

DISPATCHED
static int small4(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand,
                  unsigned avail, int alpha, int beta) {
    return small(c, g, th, occupied, hand, avail, 4, alpha, beta);
}
DISPATCHED
static int small5(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand,
                  unsigned avail, int alpha, int beta) {
    return small(c, g, th, occupied, hand, avail, 5, alpha, beta);
}
DISPATCHED
static int small6(const Core *c, const Groups *g, const Threats *th, unsigned occupied, int hand,
                  unsigned avail, int alpha, int beta) {
    return small(c, g, th, occupied, hand, avail, 6, alpha, beta);
}

/* Sorts the planes `source[0..n)` by their cell (plane << 1 | hand bit), ties by plane: at most four. */
static void sort_sources(int *source, const uint32_t *cells, int n) {
    for (int i = 1; i < n; i++) {
        int x = source[i];
        int j = i - 1;
        while (j >= 0 && (cells[source[j]] > cells[x] || (cells[source[j]] == cells[x] && source[j] > x))) {
            source[j + 1] = source[j];
            j--;
        }
        source[j + 1] = x;
    }
}

/* The images of a byte of a board under every board map (Core.images). */
static inline uint16_t *image_of(const Core *c, int half, unsigned byte) {
    return c->images + (size_t)(half * 256 + (int)byte) * (size_t)c->map_stride;
}

DISPATCHED
static void canonical_key(const Core *c, unsigned occupied, uint64_t planes, int hand, Key *key) {
    uint16_t images[MAX_MAPS];
    uint16_t least = 0xFFFF;
    const uint16_t *low = image_of(c, 0, occupied & 0xFF), *high = image_of(c, 1, occupied >> 8);
    for (int i = 0; i < c->nmaps; i++) {
        uint16_t image = low[i] | high[i];
        images[i] = image;
        if (image < least)
            least = image;
    }
    int found = 0;
    key->occupied = least;
    for (int i = 0; i < c->nmaps; i++) {
        if (images[i] != least)
            continue;
        uint32_t cells[4];
        unsigned flip = 0;
        for (int a = 0; a < 4; a++) {
            unsigned p = (unsigned)(planes >> (16 * a)) & 0xFFFF;
            unsigned q = image_of(c, 0, p & 0xFF)[i] | image_of(c, 1, p >> 8)[i];
            unsigned r = q ^ least;
            unsigned h = (unsigned)(hand >> a) & 1;
            if (r < q || (r == q && h)) {
                q = r;
                h ^= 1;
                flip |= 1u << a;
            }
            cells[a] = q << 1 | h;
        }
        uint64_t out_planes = 0;
        int out_hand = 0, target[4];
        int source[4];
        for (int j = 0; j < c->ncounted; j++)
            source[j] = c->counted[j];
        sort_sources(source, cells, c->ncounted);
        for (int j = 0; j < c->ncounted; j++)
            target[source[j]] = c->counted[j];
        for (int j = 0; j < c->nothers; j++)
            source[j] = c->others[j];
        sort_sources(source, cells, c->nothers);
        for (int j = 0; j < c->nothers; j++)
            target[source[j]] = c->others[j];
        for (int a = 0; a < 4; a++) {
            out_planes |= (uint64_t)(cells[a] >> 1) << (16 * target[a]);
            out_hand |= (int)(cells[a] & 1) << target[a];
        }
        if (!found || out_planes < key->planes || (out_planes == key->planes && out_hand < key->hand)) {
            found = 1;
            key->planes = out_planes;
            key->hand = out_hand;
            key->map = i;
            key->flip = flip;
            memcpy(key->target, target, sizeof target);
        }
    }
}

/* A turn (square << 4 | piece) into the canonical image's frame, and back. */
static int to_canonical(const Core *c, const Key *k, int move) {
    int piece = move & 15, out = 0;
    for (int a = 0; a < 4; a++)
        out |= (int)(((unsigned)piece >> a & 1) ^ (k->flip >> a & 1)) << k->target[a];
    return c->maps[k->map][0][move >> 4] << 4 | out;
}

static int from_canonical(const Core *c, const Key *k, int move) {
    int piece = move & 15, out = 0;
    for (int a = 0; a < 4; a++)
        out |= (int)(((unsigned)piece >> k->target[a] & 1) ^ (k->flip >> a & 1)) << a;
    return c->maps[k->map][1][move >> 4] << 4 | out;
}

static size_t slot_of(const Core *c, const Key *k) {
    uint64_t h = (k->planes ^ ((uint64_t)k->occupied << 48) ^ ((uint64_t)k->hand << 40)) * 0x9E3779B97F4A7C15ULL;
    return (size_t)(((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL) >> (64 - c->bits)) & ~(size_t)1;
}

static inline int same_key(const Entry *e, const Key *k) {
    return e->hand1 == k->hand + 1 && e->occupied == k->occupied && e->planes == k->planes;
}

static void check_limits(Core *c) {
    if (c->stopped || (c->deadline > 0 && now_seconds() >= c->deadline))
        c->aborted = 1;
}

/* Moves the least of keyed[i..n) to keyed[i]. */
static inline void pick(uint32_t *keyed, int i, int n) {
    int least = i;
    for (int j = i + 1; j < n; j++)
        if (keyed[j] < keyed[least])
            least = j;
    uint32_t x = keyed[least];
    keyed[least] = keyed[i];
    keyed[i] = x;
}

/* Records what a search of `depth` turns (at most the empty squares) found below a node. */
static void store(Core *c, size_t slot, const Key *k, int depth, int best, int alpha, int beta, int move) {
    Entry *bucket = &c->tt[slot];
    Entry *e = NULL;
    int low = -BIG, high = BIG;
    for (int i = 0; i < 2; i++) {
        if (same_key(&bucket[i], k)) {
            e = &bucket[i];
            if (depth < e->depth)
                return; /* a deeper search's bounds are worth more */
            low = e->low;
            high = e->high;
            if (depth > e->depth) {
                /* Of a shallower search only its proofs hold (see negamax). */
                if (low < 1)
                    low = -BIG;
                if (high > -1)
                    high = BIG;
            }
        }
    }
    if (e == NULL) {
        /* The first entry keeps the deeper search; whatever it displaces goes to the second. */
        if (bucket[0].hand1 == 0 || depth >= bucket[0].depth) {
            bucket[1] = bucket[0];
            e = &bucket[0];
        } else {
            e = &bucket[1];
        }
    }
    int kept_move = same_key(e, k) && e->has_move;
    if (best <= alpha) {
        if (best < high)
            high = best;
    } else if (best >= beta) {
        if (best > low)
            low = best;
    } else {
        low = high = best;
    }
    e->planes = k->planes;
    e->occupied = k->occupied;
    e->hand1 = (uint8_t)(k->hand + 1);
    e->low = (int8_t)low;
    e->high = (int8_t)high;
    e->depth = (uint8_t)depth;
    /* A search that failed low proves nothing of its best turn: an entry that proves a win keeps its winning turn,
     * which a later search for a quicker win that fails would otherwise overwrite (the table's turn is what a root
     * whose entry proves the win plays: perfect's next turns after its proof). Not under a node cap: perfect's
     * levels search with one, and their ladder was measured on the table as it was (test_perfect's tripwire). */
    if (best <= alpha && kept_move && low >= 1 && !c->max_nodes)
        return;
    e->has_move = move >= 0;
    e->move = (uint8_t)(move >= 0 ? to_canonical(c, k, move) : 0);
}

/* Score of a node for the player to move, searched `depth` turns deep (a node at the horizon scores 0, as a draw;
 * with depth >= empty squares nothing is cut and the score is exact). */
DISPATCHED
static int negamax(Core *c, unsigned occupied, uint64_t planes, int hand, unsigned avail, int empty, int depth,
                   int alpha, int beta, int root, const Groups *g, const Threats *known) {
    if (c->max_nodes && c->nodes >= c->max_nodes) {
        c->aborted = 1;
        return 0;
    }
    c->nodes++;
    if (c->nodes % CHECK_EVERY == 0) {
        check_limits(c);
        if (c->aborted)
            return 0;
    }
    /* The threats on the board: from the parent when it derived them (to order its turns), else here. */
    Threats own;
    const Threats *th = known;
    if (th == NULL) {
        threats(g, &own);
        th = &own;
    }
    unsigned winners = th->all;
    /* Below the root the piece in hand is never a winner: the parent gives only safe pieces. */
    if (winners >> hand & 1)
        return empty;
    if (empty == 1)
        return 0;
    if (empty <= 3 && depth >= empty && !root)
        return endgame(c, g, th, occupied, hand, avail, empty);
    if (empty == 4 && depth >= 4 && !root)
        return small4(c, g, th, occupied, hand, avail, alpha, beta);
    if (empty == 6 && depth >= 6 && !root)
        return small6(c, g, th, occupied, hand, avail, alpha, beta);
    if (empty == 5 && depth >= 5 && !root)
        return small5(c, g, th, occupied, hand, avail, alpha, beta);
    unsigned live_attributes = 0;
    unsigned live = live_lines(c, g, avail | 1u << hand, &live_attributes);
    if (!live || depth <= 0)
        return 0;
    if (empty - 2 <= alpha)
        return empty - 2;
    if (1 - empty >= beta)
        return 1 - empty;
    if (depth > empty)
        depth = empty;
    int use_tt = empty >= (c->max_nodes ? TT_MIN_EMPTY_CAPPED : TT_MIN_EMPTY);
    size_t slot = 0;
    Key key = {0};
    int tt_move = -1;
    if (use_tt) {
        canonical_key(c, occupied, planes, hand, &key);
        slot = slot_of(c, &key);
        const Entry *e = &c->tt[slot];
        if (!same_key(e, &key))
            e++;
        if (same_key(e, &key)) {
            if (e->has_move)
                tt_move = from_canonical(c, &key, e->move);
            int low = e->low, high = e->high;
            if (e->depth < depth) {
                /* A shallower search's proofs still hold: a win (loss) within fewer turns is one within more. */
                if (low < 1)
                    low = -BIG;
                if (high > -1)
                    high = BIG;
            }
            if (root)
                c->best_move = tt_move;
            if (low >= beta)
                return low;
            if (high <= alpha)
                return high;
            if (low == high)
                return low;
            if (low > alpha)
                alpha = low;
            if (high < beta)
                beta = high;
        }
    }
    int original_alpha = alpha;
    int best = -BIG, best_move = -1;
    unsigned free_squares = 0xFFFFu & ~occupied;
    /* Squares on no live group are interchangeable: placing on one or another leaves the same live groups. */
    unsigned covered = 0;
    for (unsigned t = live; t; t &= t - 1)
        covered |= c->lines[lowest(t)];
    unsigned dead_squares = free_squares & ~covered;
    if (dead_squares)
        free_squares &= covered | (dead_squares & -dead_squares);
    int ordered = empty >= ORDER_MIN;
    int moves[256], n = 0;
    /* ordered: key << 16 | index << 8 | turn, all different, so that sorting them is a stable sort by key (one
     * array to shift instead of two) */
    uint32_t keyed[256];
    Groups afters[16];          /* ordered: the groups after the piece in hand is placed on each square ... */
    Threats threats_at[16];     /* ... and the threats then */
    for (unsigned f = free_squares; f; f &= f - 1) {
        int square = lowest(f);
        unsigned winners = winners_after(g, th, square, hand);
        unsigned safe = avail & ~winners;
        if (!safe) {
            if (1 - empty > best) {
                best = 1 - empty;
                best_move = square << 4 | lowest(avail);
                if (root)
                    c->best_move = best_move;
            }
            continue;
        }
        /* A win proof's root (win_order): the pieces left that already win somewhere after the placement weigh
         * against the turn as well (see WIN_ORDER_DEADLY). */
        int deadly = root && c->win_order ? WIN_ORDER_DEADLY * popcount16(avail & winners) : 0;
        Mobility mob;
        mob.nfree = 0;
        if (ordered) {
            unsigned occupied2 = occupied | 1u << square;
            place(c, g, occupied, square, hand, &afters[square]);
            threats(&afters[square], &threats_at[square]);
            mobility_setup(&afters[square], &threats_at[square], occupied2, &mob);
        }
        /* Pieces that agree on every live attribute are interchangeable: give one of them. */
        unsigned classes = 0;
        for (unsigned t = safe; t; t &= t - 1) {
            int piece = lowest(t);
            unsigned cls = 1u << (piece & live_attributes);
            if (classes & cls)
                continue;
            classes |= cls;
            /* Mobility: the opponent's turns that do not lose at once; fewest first. */
            if (ordered)
                keyed[n] = (uint32_t)(mobility(&mob, avail & ~(1u << piece), piece) + deadly) << 16 |
                           (uint32_t)n << 8 | (uint32_t)(square << 4 | piece);
            moves[n++] = square << 4 | piece;
        }
    }
    /* The table's best turn first; then, ordered, the others by key, each picked when its turn comes (a node that
     * cuts off early sorts no more than it tries). */
    int from = 0;
    for (int i = 0; i < n && tt_move >= 0; i++) {
        if (moves[i] == tt_move) {
            if (ordered) {
                uint32_t x = keyed[i];
                keyed[i] = keyed[0];
                keyed[0] = x;
            } else {
                memmove(moves + 1, moves, (size_t)i * sizeof *moves);
                moves[0] = tt_move;
            }
            from = 1;
            break;
        }
    }
    if (root && c->listing) {
        for (int i = 0; i < n; i++) {
            if (ordered && i >= from)
                pick(keyed, i, n);
            c->listed[i] = ordered ? (int)(keyed[i] & 0xFF) : moves[i];
        }
        c->nlisted = n;
        return 0;
    }
    int last_square = -1;
    Groups after;
    for (int i = 0; i < n; i++) {
        if (ordered) {
            if (i >= from)
                pick(keyed, i, n);
            moves[i] = (int)(keyed[i] & 0xFF);
        }
        int square = moves[i] >> 4, piece = moves[i] & 15;
        const Groups *child = &after;
        if (ordered) {
            child = &afters[square];
        } else if (square != last_square) {
            place(c, g, occupied, square, hand, &after);
            last_square = square;
        }
        int score = -negamax(c, occupied | 1u << square, planes | PIECE_PLANES[hand][square], piece,
                             avail & ~(1u << piece), empty - 1, depth - 1, -beta, -alpha, 0, child,
                             ordered ? &threats_at[square] : NULL);
        if (c->aborted)
            return 0;
        if (score > best) {
            best = score;
            best_move = moves[i];
            if (root)
                c->best_move = best_move;
            if (score > alpha) {
                alpha = score;
                if (alpha >= beta)
                    break;
            }
        }
    }
    if (use_tt)
        store(c, slot, &key, depth, best, original_alpha, beta, best_move);
    return best;
}

/* --- the Python type ------------------------------------------------------------------------------------------ */

static int fill_tables(Core *c, PyObject *maps) {
    PyObject *seq = PySequence_Fast(maps, "maps must be a sequence of board maps");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > MAX_MAPS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "between 1 and %d board maps are needed", MAX_MAPS);
        return -1;
    }
    c->map_stride = (int)((n + 15) & ~15);
    c->images = PyMem_Calloc((size_t)2 * 256 * (size_t)c->map_stride, sizeof *c->images);
    c->maps = PyMem_Calloc((size_t)n, sizeof *c->maps);
    if (c->images == NULL || c->maps == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    c->nmaps = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "a board map must be a sequence");
        if (m == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        if (PySequence_Fast_GET_SIZE(m) != 16) {
            Py_DECREF(m);
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a board map has 16 squares");
            return -1;
        }
        int image[16];
        for (int s = 0; s < 16; s++) {
            long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(m, s));
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(m);
                Py_DECREF(seq);
                return -1;
            }
            if (v < 0 || v > 15) {
                Py_DECREF(m);
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "a board map sends squares to 0..15");
                return -1;
            }
            image[s] = (int)v;
        }
        Py_DECREF(m);
        unsigned seen = 0;
        for (int s = 0; s < 16; s++) {
            seen |= 1u << image[s];
            c->maps[i][0][s] = (uint8_t)image[s];
            c->maps[i][1][image[s]] = (uint8_t)s;
        }
        if (seen != 0xFFFF) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a board map is a permutation of the 16 squares");
            return -1;
        }
        for (int x = 0; x < 256; x++) {
            uint16_t lo = 0, hi = 0;
            for (int s = 0; s < 8; s++) {
                if (x >> s & 1) {
                    lo |= (uint16_t)(1u << image[s]);
                    hi |= (uint16_t)(1u << image[s + 8]);
                }
            }
            image_of(c, 0, (unsigned)x)[i] = lo;
            image_of(c, 1, (unsigned)x)[i] = hi;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static int Core_init(Core *c, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"lines", "counted", "maps", "tt_bits", NULL};
    PyObject *lines, *maps;
    int counted, bits;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OiOi", kwlist, &lines, &counted, &maps, &bits))
        return -1;
    if (c->tt != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Core is already initialised");
        return -1;
    }
    if (counted < 1 || counted > 15) {
        PyErr_SetString(PyExc_ValueError, "counted attributes must be a non-empty subset of the 4 piece bits");
        return -1;
    }
    if (bits < 4 || bits > 30) {
        PyErr_SetString(PyExc_ValueError, "tt_bits must be in 4..30");
        return -1;
    }
    PyObject *seq = PySequence_Fast(lines, "lines must be a sequence of square masks");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_LINES) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most %d winning groups", MAX_LINES);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < 0 || v > 0xFFFF || popcount16((unsigned)v) != 4) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "a winning group is a mask of 4 squares");
            return -1;
        }
        c->lines[i] = (uint16_t)v;
    }
    Py_DECREF(seq);
    c->nlines = (int)n;
    for (int sq = 0; sq < 16; sq++) {
        c->nthrough[sq] = 0;
        c->through_mask[sq] = 0;
        for (int i = 0; i < c->nlines; i++)
            if (c->lines[i] >> sq & 1) {
                c->through[sq][c->nthrough[sq]++] = (uint8_t)i;
                c->through_mask[sq] |= 1u << i;
            }
    }
    c->ncounted = c->nothers = 0;
    for (int a = 0; a < 4; a++) {
        if (counted >> a & 1)
            c->counted[c->ncounted++] = a;
        else
            c->others[c->nothers++] = a;
    }
    if (fill_tables(c, maps) < 0)
        return -1;
    c->bits = bits;
    c->tt = PyMem_Calloc((size_t)1 << bits, sizeof(Entry));
    if (c->tt == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->best_move = -1;
    return 0;
}

static void Core_dealloc(Core *c) {
    PyMem_Free(c->tt);
    PyMem_Free(c->images);
    PyMem_Free(c->maps);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Runs a search from the Python side (search and root_turns); returns the score, or -1000 with an exception set. */
static int run(Core *c, PyObject *args, PyObject *kwds, int listing) {
    static char *kwlist[] = {"occupied", "planes", "hand",  "alpha",     "beta", "max_nodes",
                             "seconds",  "depth",  "win_order", NULL};
    unsigned int occupied;
    unsigned long long planes, max_nodes = 0;
    int hand, alpha, beta, depth = EXACT, win_order = 0;
    double seconds = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "IKiii|Kdip", kwlist, &occupied, &planes, &hand, &alpha, &beta,
                                     &max_nodes, &seconds, &depth, &win_order))
        return -1000;
    if (c->tt == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Core is not initialised");
        return -1000;
    }
    if (occupied > 0xFFFF || occupied == 0xFFFF || hand < 0 || hand > 15) {
        PyErr_SetString(PyExc_ValueError, "a node has an empty square and a piece in hand (0..15)");
        return -1000;
    }
    if (c->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Core.search is already running (one search per core at a time)");
        return -1000;
    }
    c->busy = 1;
    c->nodes = 0;
    c->aborted = 0;
    c->best_move = -1;
    c->max_nodes = max_nodes;
    c->win_order = win_order;
    c->listing = listing;
    c->nlisted = -1;
    c->deadline = seconds > 0 ? now_seconds() + seconds : 0.0;
    int score = 0;
    if (c->stopped) {
        c->aborted = 1;
    } else {
        unsigned avail = 0xFFFFu & ~(1u << hand);
        for (int s = 0; s < 16; s++)
            if (occupied >> s & 1)
                avail &= ~(1u << piece_at(planes, s));
        int empty = 16 - popcount16(occupied);
        Py_BEGIN_ALLOW_THREADS
        Groups g;
        summarize(c, occupied, planes, &g);
        score = negamax(c, occupied, planes, hand, avail, empty, depth, alpha, beta, 1, &g, NULL);
        Py_END_ALLOW_THREADS
        if (c->aborted)
            score = 0;
    }
    c->listing = 0;
    c->busy = 0;
    return score;
}

static PyObject *Core_search(Core *c, PyObject *args, PyObject *kwds) {
    int score = run(c, args, kwds, 0);
    return score == -1000 ? NULL : PyLong_FromLong(score);
}

static PyObject *Core_root_turns(Core *c, PyObject *args, PyObject *kwds) {
    if (run(c, args, kwds, 1) == -1000)
        return NULL;
    if (c->nlisted < 0)
        Py_RETURN_NONE;
    PyObject *out = PyList_New(c->nlisted);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < c->nlisted; i++) {
        PyObject *move = PyLong_FromLong(c->listed[i]);
        if (move == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, move);
    }
    return out;
}

static PyObject *Core_stop(Core *c, PyObject *Py_UNUSED(ignored)) {
    c->stopped = 1;
    Py_RETURN_NONE;
}

static PyObject *Core_reset_stop(Core *c, PyObject *Py_UNUSED(ignored)) {
    c->stopped = 0;
    Py_RETURN_NONE;
}

static PyObject *Core_clear(Core *c, PyObject *Py_UNUSED(ignored)) {
    if (c->busy) {
        PyErr_SetString(PyExc_RuntimeError, "cannot clear the table during a search");
        return NULL;
    }
    if (c->tt != NULL)
        memset(c->tt, 0, ((size_t)1 << c->bits) * sizeof(Entry));
    Py_RETURN_NONE;
}

static PyObject *Core_get_nodes(Core *c, void *closure) { return PyLong_FromUnsignedLongLong(c->nodes); }
static PyObject *Core_get_aborted(Core *c, void *closure) { return PyBool_FromLong(c->aborted); }
static PyObject *Core_get_best_move(Core *c, void *closure) { return PyLong_FromLong(c->best_move); }

static PyMethodDef Core_methods[] = {
    {"search", (PyCFunction)(void (*)(void))Core_search, METH_VARARGS | METH_KEYWORDS,
     "search(occupied, planes, hand, alpha, beta, max_nodes=0, seconds=0.0, depth=64, win_order=False) -> fail-soft "
     "score"},
    {"root_turns", (PyCFunction)(void (*)(void))Core_root_turns, METH_VARARGS | METH_KEYWORDS,
     "root_turns(occupied, planes, hand, alpha, beta, max_nodes=0, seconds=0.0, depth=64, win_order=False) -> the "
     "root's turns (square << 4 | piece) in the order search() would try them, or None when the root decides without "
     "trying any (a win at once, the table, a bound)"},
    {"stop", (PyCFunction)Core_stop, METH_NOARGS, "End a running search (thread-safe), until reset_stop()."},
    {"reset_stop", (PyCFunction)Core_reset_stop, METH_NOARGS, "Clear a stop request."},
    {"clear", (PyCFunction)Core_clear, METH_NOARGS, "Empty the transposition table."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"nodes", (getter)Core_get_nodes, NULL, "Nodes visited by the last search.", NULL},
    {"aborted", (getter)Core_get_aborted, NULL, "True when the last search was cut short.", NULL},
    {"best_move", (getter)Core_get_best_move, NULL, "square << 4 | piece of the root's best turn, or -1.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quarto_arena.protocol._solver.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Exact negamax over positions with a piece in hand (see _solver_py.Core).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_solver", .m_doc = "The exact Quarto solver core in C.", .m_size = -1,
};

PyMODINIT_FUNC PyInit__solver(void) {
    for (int a = 0; a < 4; a++) {
        HAS[a] = HAS_NOT[a] = 0;
        for (int p = 0; p < 16; p++) {
            if (p >> a & 1)
                HAS[a] |= (uint16_t)(1u << p);
            else
                HAS_NOT[a] |= (uint16_t)(1u << p);
        }
    }
    for (int x = 0; x < 256; x++) {
        unsigned set = (unsigned)x >> 4, clear = (unsigned)x & 15, w = 0;
        for (int p = 0; p < 16; p++)
            if ((p & set) || (~p & clear))
                w |= 1u << p;
        WINNERS[x] = (uint16_t)w;
    }
    for (int p = 0; p < 16; p++)
        PIECE_SC[p] = (uint8_t)(p << 4 | (~p & 15));
    for (int p = 0; p < 16; p++)
        for (int s = 0; s < 16; s++) {
            uint64_t v = 0;
            for (int a = 0; a < 4; a++)
                if (p >> a & 1)
                    v |= 1ULL << (16 * a + s);
            PIECE_PLANES[p][s] = v;
        }
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntMacro(m, EXACT) < 0) { /* solver.EXACT is this one */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
