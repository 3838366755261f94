// QuartoBot.java - a Quarto bot speaking UQI, the Universal Quarto Interface (SPEC.md), over standard input and
// output. Written by `quarto-arena new-bot java`: a starting point. One file, the JDK only (Java 17 or later).
//
//     javac QuartoBot.java
//     java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 QuartoBot
//
// The two flags keep the JVM's own work small and steady (one garbage collector thread, the quick compiler only):
// a search of a few milliseconds then never waits for a collection or a burst of compilation.
//
// Play: a small alpha-beta search over turns (a turn places the piece in hand and gives one, SPEC 2.4), deepening
// one turn at a time until its time is spent; it finds every win within its depth and never gives a piece that
// wins at once when a safe one exists. The option Depth caps the search (a `go depth N` replaces it).
//
// Why one thread is enough: UQI wants `isready` answered and `stop` obeyed during a search (SPEC 4.7). This bot
// searches at most MAX_SEARCH_MS before it reads the next line, so both wait no longer than that. `go infinite`
// wants its turn only after `stop` (SPEC 4.5): the bot searches as usual, then holds the turn until `stop`; while
// it holds one it refuses `position`, `go`, `newgame` and `setoption` (SPEC 4.10). A bot that searches longer
// must read its input in a thread of its own (a BlockingQueue between the reader and the search).

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

public final class QuartoBot {
    static final int MAX_LINE = 4096; // SPEC 3.1: no line is longer than this many bytes
    static final long MAX_SEARCH_MS = 250; // the longest search, whatever the limits
    static final double MOVE_OVERHEAD_MS = 50; // SPEC 4.5: kept back on a loaded machine, times the load
    static final int DEPTH_DEFAULT = 3;
    static final int DEPTH_MAX = 16;
    static final int WIN = 1000;
    static final String HEX = "0123456789abcdef";
    static final BigInteger MAX_VALUE = BigInteger.valueOf(Long.MAX_VALUE);

    /** The rules of one game (SPEC 1.1): the winning groups, the attributes that count, the claim rule. */
    record Variant(List<int[]> groups, int attrs, boolean strict) {
        static Variant of(boolean advanced, int attrs, boolean strict) {
            List<int[]> groups = new ArrayList<>();
            for (int r = 0; r < 4; r++) groups.add(new int[] {4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3});
            for (int c = 0; c < 4; c++) groups.add(new int[] {c, c + 4, c + 8, c + 12});
            groups.add(new int[] {0, 5, 10, 15});
            groups.add(new int[] {3, 6, 9, 12});
            if (advanced) {
                for (int r = 0; r < 3; r++) {
                    for (int c = 0; c < 3; c++) {
                        int s = 4 * r + c;
                        groups.add(new int[] {s, s + 1, s + 4, s + 5});
                    }
                }
            }
            return new Variant(groups, attrs, strict);
        }

        /** Does some full group through square {@code sq} share a counted attribute? */
        boolean completes(int[] cell, int sq) {
            for (int[] g : groups) {
                if (g[0] != sq && g[1] != sq && g[2] != sq && g[3] != sq) continue;
                int all = 0xF, none = 0xF;
                boolean filled = true;
                for (int s : g) {
                    if (cell[s] < 0) {
                        filled = false;
                        break;
                    }
                    all &= cell[s];
                    none &= ~cell[s];
                }
                if (filled && ((all | none) & attrs) != 0) return true;
            }
            return false;
        }
    }

    /** A turn that cannot be played, or a position string that cannot be read; the message says why. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String why) {
            super(why);
        }
    }

    /** A position (SPEC 2.3) with the strict-claims state: can the player to move claim a missed alignment? */
    static final class Pos {
        int[] cell = new int[16]; // the piece on each square (square = (row-1)*4 + column), -1 when empty
        int hand = -1; // the piece to place, -1 when the player to move only gives
        int avail = 0xFFFF; // pieces neither on the board nor in hand
        boolean claimable;
        boolean over;

        Pos() {
            Arrays.fill(cell, -1);
        }

        Pos copy() {
            Pos p = new Pos();
            p.cell = cell.clone();
            p.hand = hand;
            p.avail = avail;
            p.claimable = claimable;
            p.over = over;
            return p;
        }

        boolean full() {
            for (int c : cell) if (c < 0) return false;
            return true;
        }

        boolean winsWith(Variant v, int sq) {
            cell[sq] = hand;
            boolean w = v.completes(cell, sq);
            cell[sq] = -1;
            return w;
        }

        /** Reads "BOARD HAND" (SPEC 2.3). */
        static Pos parse(Variant v, String board, String hand) throws Invalid {
            Pos p = new Pos();
            String[] rows = board.split("/", -1);
            if (rows.length != 4) throw new Invalid("the board does not have 4 rows of 4 cells");
            int used = 0;
            for (int i = 0; i < 4; i++) {
                if (rows[i].length() != 4) throw new Invalid("the board does not have 4 rows of 4 cells");
                for (int c = 0; c < 4; c++) {
                    char ch = rows[i].charAt(c);
                    if (ch == '.') continue;
                    int piece = HEX.indexOf(Character.toLowerCase(ch));
                    if (piece < 0) throw new Invalid("a cell is not '.' or a hex digit");
                    if ((used >> piece & 1) == 1) throw new Invalid("a piece appears twice");
                    used |= 1 << piece;
                    p.cell[(3 - i) * 4 + c] = piece; // the first row written is row 4
                }
            }
            if (!hand.equals("-")) {
                int piece = hand.length() == 1 ? HEX.indexOf(Character.toLowerCase(hand.charAt(0))) : -1;
                if (piece < 0) throw new Invalid("the piece in hand is not one hex digit or '-'");
                if ((used >> piece & 1) == 1) throw new Invalid("the piece in hand is also on the board");
                if (p.full()) throw new Invalid("the board is full and a piece is in hand");
                used |= 1 << piece;
                p.hand = piece;
            }
            p.avail = 0xFFFF & ~used;
            // An alignment on the board ended an auto game; under strict claims it is dead (never called).
            boolean aligned = false;
            for (int s = 0; s < 16; s++) aligned |= p.cell[s] >= 0 && v.completes(p.cell, s);
            if (!v.strict() && aligned) {
                if (p.hand >= 0) throw new Invalid("the board already shows a winning group, so no piece can be in hand");
                p.over = true;
            } else if (p.full()) {
                p.over = true;
            }
            return p;
        }

        /** Plays one turn token (SPEC 2.4). */
        void apply(Variant v, String tok) throws Invalid {
            if (over) throw new Invalid("the game is already over");
            if (tok.equals("!")) {
                if (!v.strict() || !claimable) throw new Invalid("nothing to claim");
                over = true;
                return;
            }
            if (tok.length() == 1) {
                int piece = HEX.indexOf(tok.charAt(0));
                if (piece < 0) throw new Invalid("not a turn token");
                if (hand >= 0) throw new Invalid("a piece is in hand and must be placed");
                if ((avail >> piece & 1) == 0) throw new Invalid("that piece is not available");
                hand = piece;
                avail &= ~(1 << piece);
                claimable = false;
                return;
            }
            if (tok.length() > 3 || tok.charAt(0) < 'a' || tok.charAt(0) > 'd' || tok.charAt(1) < '1' || tok.charAt(1) > '4') {
                throw new Invalid("not a turn token");
            }
            int sq = (tok.charAt(1) - '1') * 4 + (tok.charAt(0) - 'a');
            boolean call = tok.length() == 3 && tok.charAt(2) == '!';
            int give = tok.length() == 3 && !call ? HEX.indexOf(tok.charAt(2)) : -1;
            if (tok.length() == 3 && !call && give < 0) throw new Invalid("not a turn token");
            if (hand < 0) throw new Invalid("no piece in hand to place");
            if (cell[sq] >= 0) throw new Invalid("the square is occupied");
            cell[sq] = hand;
            hand = -1;
            claimable = false;
            boolean win = v.completes(cell, sq);
            if (call) {
                if (!win) throw new Invalid("false QUARTO! call");
                over = true;
                return;
            }
            if (win && !v.strict()) {
                if (give >= 0 && (avail >> give & 1) == 0) throw new Invalid("the given piece is not available"); // SPEC 1.1
                over = true; // auto: the placement wins; a piece given with it is ignored
                return;
            }
            if (full()) {
                if (give >= 0) throw new Invalid("the board is full: no piece can be given");
                over = true; // strict: an uncalled last placement is a draw
                return;
            }
            if (give < 0) throw new Invalid("a piece must be given");
            if ((avail >> give & 1) == 0) throw new Invalid("the given piece is not available");
            hand = give;
            avail &= ~(1 << give);
            claimable = win; // strict: a missed alignment the opponent may claim next turn
        }
    }

    static String squareName(int s) {
        return "" + (char) ('a' + (s & 3)) + (char) ('1' + (s >> 2));
    }

    // ---- search ---------------------------------------------------------------------------------------------

    /** A turn that wins at once, if there is one: a claim, or a winning placement (called under strict claims). */
    static String winningTurn(Pos p, Variant v) {
        if (p.claimable) return "!";
        if (p.hand < 0) return null;
        for (int s = 0; s < 16; s++) {
            if (p.cell[s] < 0 && p.winsWith(v, s)) return squareName(s) + (v.strict() ? "!" : "");
        }
        return null;
    }

    /** Every turn when there is no win (then no placement completes a group). */
    static List<String> allTurns(Pos p) {
        List<String> out = new ArrayList<>();
        if (p.hand < 0) {
            for (int k = 0; k < 16; k++) if ((p.avail >> k & 1) == 1) out.add(String.valueOf(HEX.charAt(k)));
            return out;
        }
        for (int s = 0; s < 16; s++) {
            if (p.cell[s] >= 0) continue;
            if (p.avail == 0) out.add(squareName(s)); // the last square: nothing left to give
            for (int k = 0; k < 16; k++) if ((p.avail >> k & 1) == 1) out.add(squareName(s) + HEX.charAt(k));
        }
        return out;
    }

    static final class Timeout extends Exception {
        private static final long serialVersionUID = 1L;

        Timeout() {
            super(null, null, false, false);
        }
    }

    /** One search: its deadline, node limit and node count. */
    static final class Search {
        final Variant variant;
        final long deadline;
        final long nodeLimit;
        long nodes;

        Search(Variant variant, long deadline, long nodeLimit) {
            this.variant = variant;
            this.deadline = deadline;
            this.nodeLimit = nodeLimit;
        }

        /** The score of {@code p} for the player to move: WIN - ply for a win at ply, 0 for a draw or the horizon. */
        int negamax(Pos p, int depth, int alpha, int beta, int ply) throws Timeout, Invalid {
            if (winningTurn(p, variant) != null) return WIN - ply;
            if (depth <= 1) return 0;
            // A clock read costs far less than a node.
            if (++nodes >= nodeLimit || System.nanoTime() >= deadline) throw new Timeout();
            int best = -WIN - 1;
            for (String tok : allTurns(p)) {
                Pos child = p.copy();
                child.apply(variant, tok);
                int score = child.over ? 0 : -negamax(child, depth - 1, -beta, -alpha, ply + 1);
                best = Math.max(best, score);
                alpha = Math.max(alpha, best);
                if (alpha >= beta) break;
            }
            return best;
        }
    }

    // ---- commands -------------------------------------------------------------------------------------------

    final PrintStream out;
    final Random random = new Random();
    Variant variant = Variant.of(false, 0xF, false);
    Pos pos; // null until a valid `position`, and after one that could not be read (SPEC 4.4)
    String held; // the turn of a `go infinite`, sent when `stop` comes
    int depthOption = DEPTH_DEFAULT;

    QuartoBot(PrintStream out) {
        this.out = out;
    }

    /** Writes one line and flushes it (SPEC 3.2: the arena waits for it). */
    void say(String line) {
        out.print(line + "\n");
        out.flush();
    }

    /** The best turn found within the depth, the time and the nodes, deepening one turn at a time. */
    String search(Pos p, int maxDepth, long deadline, long nodeLimit) throws Invalid {
        String win = winningTurn(p, variant);
        if (win != null) {
            say("info depth 1 score win 1 pv " + win);
            return win;
        }
        List<String> turns = allTurns(p);
        Collections.shuffle(turns, random); // equal turns differ from game to game
        Search s = new Search(variant, deadline, nodeLimit);
        for (int depth = 2; depth <= maxDepth; depth++) {
            int best = -WIN - 1, bestIndex = 0;
            try {
                for (int i = 0; i < turns.size(); i++) {
                    if (depth > 2 && System.nanoTime() >= deadline) throw new Timeout(); // depth 2 always ends
                    Pos child = p.copy();
                    child.apply(variant, turns.get(i));
                    int score = child.over ? 0 : -s.negamax(child, depth - 1, -WIN - 1, WIN + 1, 1);
                    if (score > best) {
                        best = score;
                        bestIndex = i;
                    }
                }
            } catch (Timeout t) {
                break; // an unfinished depth is not trusted
            }
            Collections.swap(turns, 0, bestIndex); // the best turn first at the next depth
            // SPEC 5.3: a proved result as win N or loss N (N turns to the end, this one included), else a value.
            if (Math.abs(best) >= WIN - 100) {
                String kind = best > 0 ? "win" : "loss";
                say("info depth " + depth + " score " + kind + " " + (WIN - Math.abs(best) + 1) + " nodes " + s.nodes + " pv " + turns.get(0));
                break;
            }
            say("info depth " + depth + " score value 0 nodes " + s.nodes + " pv " + turns.get(0));
        }
        return turns.get(0);
    }

    /** Handles one line; false on `quit`. */
    boolean handle(String line) {
        String[] w = Arrays.stream(line.split("[ \t]+")).filter(x -> !x.isEmpty()).toArray(String[]::new);
        if (w.length == 0) return true; // empty lines are ignored
        String cmd = w[0];
        if (w.length > 1 && List.of("isready", "stop", "quit").contains(cmd)) {
            say("error " + cmd + " takes no arguments"); // SPEC 4.9: a word too many makes a command malformed
            return true;
        }
        if (held != null && List.of("setoption", "newgame", "position", "go").contains(cmd)) {
            say("error " + cmd + " a search is running (send stop first)"); // SPEC 4.10
            return true;
        }
        switch (cmd) {
            case "uqi" -> uqi(w);
            case "isready" -> say("readyok");
            case "setoption" -> setoption(w);
            case "newgame" -> newgame(w);
            case "position" -> position(w);
            case "go" -> go(w);
            case "stop" -> {
                if (held != null) say("turn " + held); // otherwise no search runs: nothing to stop (SPEC 4.6)
                held = null;
            }
            case "quit" -> {
                return false;
            }
            default -> say("error unknown command " + cmd);
        }
        return true;
    }

    /** A new session (SPEC 4.1): the handshake, and nothing kept of the last one. */
    void uqi(String[] w) {
        if (w.length > 2 || (w.length == 2 && !w[1].matches("0*[1-9][0-9]*"))) {
            say("error uqi takes one version number, at least 1");
            return;
        }
        held = null;
        depthOption = DEPTH_DEFAULT;
        variant = Variant.of(false, 0xF, false);
        pos = null;
        say("id name My Java bot 0.1");
        say("id author me");
        say("option name Depth type spin min 1 max " + DEPTH_MAX + " default " + DEPTH_DEFAULT);
        say("uqiok 1");
    }

    void setoption(String[] w) {
        if (w.length < 3 || !w[1].equals("name")) {
            say("error setoption needs 'name ID [value VALUE]'");
        } else if (!w[2].equalsIgnoreCase("Depth")) { // option ids: any case
            say("error setoption unknown option " + w[2]);
        } else if (w.length != 5 || !w[3].equals("value")) {
            say("error setoption Depth needs 'value N' with one integer");
        } else if (!w[4].matches("-?[0-9]{1,9}") || Integer.parseInt(w[4]) < 1 || Integer.parseInt(w[4]) > DEPTH_MAX) {
            say("error setoption Depth value " + w[4] + " is not an integer in 1.." + DEPTH_MAX); // SPEC 4.2
        } else {
            depthOption = Integer.parseInt(w[4]); // success: no reply (SPEC 4.2)
        }
    }

    /** {@code newgame shapes S attributes A claims C}, the fields in any order (SPEC 4.3). */
    void newgame(String[] w) {
        List<String> names = List.of("shapes", "attributes", "claims");
        String[] fields = new String[3];
        for (int i = 1; i < w.length; i += 2) {
            int k = names.indexOf(w[i]);
            if (k < 0) {
                say("error newgame unknown field " + w[i]);
                return;
            }
            if (fields[k] != null) {
                say("error newgame " + w[i] + " given twice");
                return;
            }
            if (i + 1 >= w.length) {
                say("error newgame " + w[i] + " needs a value");
                return;
            }
            fields[k] = w[i + 1].toLowerCase(Locale.ROOT);
        }
        if (fields[0] == null || fields[1] == null || fields[2] == null) {
            say("error newgame needs 'shapes S attributes A claims C'");
            return;
        }
        List<String> attributeNames = List.of("fill", "height", "shape", "color"); // bits 0..3
        int attrs = 0;
        for (String a : fields[1].split(",", -1)) {
            int bit = attributeNames.indexOf(a);
            if (a.isEmpty() || (bit >= 0 && (attrs >> bit & 1) == 1)) {
                say("error newgame attributes " + fields[1] + ": an attribute is empty or named twice");
                return;
            }
            if (bit < 0) {
                say("error newgame unsupported attribute " + a);
                return;
            }
            attrs |= 1 << bit;
        }
        if (!fields[0].equals("standard") && !fields[0].equals("advanced")) {
            say("error newgame unsupported shapes " + fields[0]);
        } else if (!fields[2].equals("auto") && !fields[2].equals("strict")) {
            say("error newgame unsupported claims " + fields[2]);
        } else {
            variant = Variant.of(fields[0].equals("advanced"), attrs, fields[2].equals("strict"));
            pos = null;
        }
    }

    /** {@code position startpos|BOARD HAND [turns ...]}: the whole game, rebuilt every time (SPEC 4.4). */
    void position(String[] w) {
        pos = null; // an invalid position leaves none (SPEC 4.4)
        try {
            Pos p;
            int i;
            if (w.length >= 2 && w[1].equals("startpos")) { // a keyword: lower case only
                p = new Pos();
                i = 2;
            } else if (w.length >= 3) {
                p = Pos.parse(variant, w[1], w[2]);
                i = 3;
            } else {
                throw new Invalid("needs 'startpos' or 'BOARD HAND'");
            }
            if (i < w.length && !w[i].equals("turns")) throw new Invalid("expected 'turns' after the position");
            for (int t = i + 1; t < w.length; t++) p.apply(variant, w[t].toLowerCase(Locale.ROOT));
            pos = p;
        } catch (Invalid e) {
            say("error position " + e.getMessage());
        }
    }

    /** {@code go [time MS] [inc MS] [otime MS] [oinc MS] [movestogo N] [movetime MS] [depth N] [nodes N] [infinite]}. */
    void go(String[] w) {
        List<String> names = List.of("time", "inc", "otime", "oinc", "movestogo", "movetime", "depth", "nodes", "infinite");
        long[] value = new long[9];
        boolean[] seen = new boolean[9];
        for (int i = 1; i < w.length; i++) {
            int k = names.indexOf(w[i]);
            if (k < 0 || seen[k]) {
                say(k < 0 ? "error go unknown limit " + w[i] : "error go " + w[i] + " given twice");
                return;
            }
            seen[k] = true;
            if (k == 8) continue; // infinite takes no value
            String text = ++i < w.length ? w[i] : "";
            if (!text.matches("[0-9]+")) {
                say("error go " + names.get(k) + " needs a whole number");
                return;
            }
            if (new BigInteger(text).compareTo(MAX_VALUE) > 0) {
                say("error go " + names.get(k) + " is above 2^63 - 1");
                return;
            }
            value[k] = Long.parseLong(text);
            if (k >= 4 && value[k] < 1) {
                say("error go " + names.get(k) + " needs at least 1");
                return;
            }
        }
        if (pos == null) {
            say("error go no valid position to search");
            return;
        }
        if (pos.over) {
            say("error go the game is over: no turn to play");
            return;
        }
        // The time to spend (SPEC 4.5): the turn's limit (movetime, or the fair share of the clock: the time left
        // over the turns still to play, plus 3/4 of inc, at most a quarter of the time left; with both, the
        // smaller), less the move overhead kept back for the pipe and a loaded machine (the arena counts both
        // against the bot): 50 ms times the load f (the last minute's load average per CPU, at least 1), at most
        // f / (1 + f) of the limit.
        long budget = MAX_SEARCH_MS;
        if (seen[5] || seen[0]) {
            long limit = seen[5] ? value[5] : Long.MAX_VALUE;
            if (seen[0]) {
                long empty = Arrays.stream(pos.cell).filter(c -> c < 0).count();
                long turnsLeft = pos.hand >= 0 ? (empty + 1) / 2 : 1 + empty / 2;
                if (seen[4]) turnsLeft = Math.min(turnsLeft, value[4]);
                long share = value[0] / Math.max(turnsLeft, 1) + Math.min(value[1] / 4 * 3, Long.MAX_VALUE / 2);
                limit = Math.min(limit, Math.min(share, value[0] / 4));
            }
            double average = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
            double f = Math.max(1, average / Runtime.getRuntime().availableProcessors());
            budget = Math.min(budget, limit - (long) Math.min(MOVE_OVERHEAD_MS * f, limit * f / (1 + f)));
        }
        long deadline = System.nanoTime() + Math.max(budget, 1) * 1_000_000L;
        int depth = seen[6] ? (int) Math.min(value[6], DEPTH_MAX) : depthOption;
        try {
            String turn = search(pos, depth, deadline, seen[7] ? value[7] : Long.MAX_VALUE);
            if (seen[8]) held = turn; // go infinite: the turn waits for stop
            else say("turn " + turn);
        } catch (Invalid e) {
            throw new IllegalStateException("the search generated an illegal turn: " + e.getMessage(), e);
        }
    }

    /** The next line of input without its terminator, null at the end; a line over the limit is given as "". */
    static String readLine(InputStream in, ByteArrayOutputStream buf, boolean[] tooLong) throws IOException {
        buf.reset();
        tooLong[0] = false;
        int b;
        while ((b = in.read()) != -1 && b != '\n') {
            if (buf.size() <= MAX_LINE) buf.write(b);
        }
        if (b == -1 && buf.size() == 0) return null;
        byte[] bytes = buf.toByteArray();
        int n = bytes.length;
        if (n > 0 && bytes[n - 1] == '\r') n--;
        tooLong[0] = n > MAX_LINE;
        return new String(bytes, 0, Math.min(n, MAX_LINE), StandardCharsets.UTF_8);
    }

    /**
     * Plays a short session with itself, its output thrown away, before the arena's first line: the JVM loads and
     * compiles the code it runs, and a cold first search would take longer than a short movetime allows (the
     * arena's start-up deadline is 10 s; this takes well under one).
     */
    static void warmUp() {
        QuartoBot quiet = new QuartoBot(new PrintStream(java.io.OutputStream.nullOutputStream()));
        for (String line : List.of("uqi 1", "setoption name Depth value 3", "newgame shapes advanced attributes color,fill claims strict",
                "position startpos turns 3 a1e", "go movetime 400", "position ..../..../..../012. 3", "go nodes 100000 infinite",
                "stop", "newgame shapes standard attributes color,shape,height,fill claims auto", "position startpos",
                "go time 1000 inc 10 otime 1000 oinc 10 movetime 100")) {
            quiet.handle(line);
        }
    }

    public static void main(String[] args) throws IOException {
        warmUp();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        QuartoBot bot = new QuartoBot(out);
        InputStream in = new java.io.BufferedInputStream(System.in);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        boolean[] tooLong = new boolean[1];
        String line;
        while ((line = readLine(in, buf, tooLong)) != null) {
            if (tooLong[0]) {
                bot.say("error line too long"); // SPEC 3.1: say so, and carry on
            } else if (!bot.handle(line)) {
                return;
            }
        }
        // end of input: exit (SPEC 3.2)
    }
}
