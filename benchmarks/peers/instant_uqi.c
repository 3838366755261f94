/* An instant UQI engine for benchmarks/peers.py: every game fills the board without a winning group and ends in a
 * draw on the 16th turn, whatever its opening (quarto-arena's default is 2 random turns), each `go` answered at once.
 *
 * The game is one fixed full board without a group (FULL), its pieces XORed with a mask: XOR with a mask keeps
 * which four pieces share an attribute, so every masked board is full without a group too. The mask is fixed by
 * the first placement (the opening's, or ours with mask 0): each piece in hand then goes to the square the masked
 * board gives it, and the engine gives the lowest piece not yet played. */
#include "common.h"

/* index = (row - 1) * 4 + column (SPEC §2.1): a1 = 0, d4 = 15. */
static const int FULL[16] = {0xc, 0x8, 0x2, 0x7, 0x5, 0x0, 0xa, 0x4, 0xb, 0xe, 0x9, 0x3, 0x1, 0xd, 0x6, 0xf};

static int board[16], hand = -1; /* before any position: the start (a give) */

static int hex(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

/* Reads `position startpos [turns TOKEN...]` into board and hand (-1: empty, none). */
static void read_position(char *line) {
    int seen = 0;
    for (int s = 0; s < 16; s++)
        board[s] = -1;
    hand = -1;
    for (char *w = strtok(line, " \t\r\n"); w; w = strtok(NULL, " \t\r\n")) {
        if (!seen) {
            seen = strcmp(w, "turns") == 0;
        } else if (w[1] == '\0') {
            hand = hex(w[0]);
        } else {
            board[(w[1] - '1') * 4 + (w[0] - 'a')] = hand;
            hand = w[2] ? hex(w[2]) : -1;
        }
    }
}

/* The turn to play: `turn` and its token. */
static void play(char *out, size_t size) {
    int mask = 0, placed = 0, square = -1, give = -1, used[16] = {0};
    for (int s = 0; s < 16; s++) {
        if (board[s] >= 0) {
            mask = board[s] ^ FULL[s];
            used[board[s]] = 1;
            placed++;
        }
    }
    if (hand >= 0) {
        used[hand] = 1;
        for (int s = 0; s < 16; s++)
            if ((FULL[s] ^ mask) == hand)
                square = s;
    }
    for (int p = 15; p >= 0; p--)
        if (!used[p])
            give = p;
    if (square < 0)
        snprintf(out, size, "turn %x\n", give);
    else if (placed == 15)
        snprintf(out, size, "turn %c%c\n", 'a' + square % 4, '1' + square / 4);
    else
        snprintf(out, size, "turn %c%c%x\n", 'a' + square % 4, '1' + square / 4, give);
}

int main(void) {
    char line[8192];
    for (int s = 0; s < 16; s++)
        board[s] = -1;
    atexit(log_cost);
    while (fgets(line, sizeof line, stdin) != NULL) {
        lines_read++;
        if (strncmp(line, "uqi", 3) == 0 && (line[3] == '\n' || line[3] == ' ' || line[3] == '\r')) {
            reply("id name instant-uqi\nuqiok 1\n");
        } else if (strncmp(line, "isready", 7) == 0) {
            reply("readyok\n");
        } else if (strncmp(line, "position", 8) == 0) {
            read_position(line);
        } else if (strncmp(line, "go", 2) == 0) {
            char out[32];
            play(out, sizeof out);
            searches++;
            reply(out);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    return 0;
}
