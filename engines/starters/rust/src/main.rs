//! A Quarto bot speaking UQI, the Universal Quarto Interface (SPEC.md), over standard input and output.
//! Written by `quarto-arena new-bot rust`: a starting point. The standard library only.
//!
//!     cargo build --release --offline
//!     ./target/release/quarto-bot
//!
//! Play: a small alpha-beta search over turns (a turn places the piece in hand and gives one, SPEC 2.4),
//! deepening one turn at a time until its time is spent; it finds every win within its depth and never gives a
//! piece that wins at once when a safe one exists. The option Depth caps the search (a `go depth N` replaces it).
//!
//! Why one thread is enough: UQI wants `isready` answered and `stop` obeyed during a search (SPEC 4.7). This bot
//! searches at most MAX_SEARCH_MS before it reads the next line, so both wait no longer than that. `go infinite`
//! wants its turn only after `stop` (SPEC 4.5): the bot searches as usual, then holds the turn until `stop`; while
//! it holds one it refuses `position`, `go`, `newgame` and `setoption` (SPEC 4.10). A bot that searches longer
//! must read its input in a thread of its own and send the lines to the search over a channel.

use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

const MAX_LINE: usize = 4096; // SPEC 3.1: no line is longer than this many bytes
const MAX_SEARCH_MS: u64 = 250; // the longest search, whatever the limits
const MOVE_OVERHEAD_MS: f64 = 50.0; // SPEC 4.5: kept back from every limit on a loaded machine, times the load
const DEPTH_DEFAULT: u32 = 3;

/// How loaded the machine is (SPEC 4.5): the last minute's load average per CPU, at least 1 (1 where the system
/// does not say: /proc/loadavg is Linux's).
fn load_factor() -> f64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(1.0, |average| (average / cpus).max(1.0))
}
const DEPTH_MAX: u32 = 16;
const WIN: i32 = 1000;
const HEX: &[u8] = b"0123456789abcdef";

/// The rules of one game (SPEC 1.1): the winning groups, the attributes that count, the claim rule.
#[derive(Clone)]
struct Variant {
    groups: Vec<[usize; 4]>,
    attrs: u8,
    strict: bool,
}

impl Variant {
    fn new(advanced: bool, attrs: u8, strict: bool) -> Variant {
        let mut groups = Vec::new();
        for r in 0..4 {
            groups.push([4 * r, 4 * r + 1, 4 * r + 2, 4 * r + 3]);
        }
        for c in 0..4 {
            groups.push([c, c + 4, c + 8, c + 12]);
        }
        groups.push([0, 5, 10, 15]);
        groups.push([3, 6, 9, 12]);
        if advanced {
            for r in 0..3 {
                for c in 0..3 {
                    let s = 4 * r + c;
                    groups.push([s, s + 1, s + 4, s + 5]);
                }
            }
        }
        Variant {
            groups,
            attrs,
            strict,
        }
    }

    /// Does some full group through square `sq` share a counted attribute?
    fn completes(&self, cell: &[i8; 16], sq: usize) -> bool {
        self.groups.iter().filter(|g| g.contains(&sq)).any(|g| {
            let (mut all, mut none) = (0xFu8, 0xFu8);
            for &s in g {
                if cell[s] < 0 {
                    return false;
                }
                all &= cell[s] as u8;
                none &= !(cell[s] as u8);
            }
            (all | none) & self.attrs != 0
        })
    }
}

/// A position (SPEC 2.3) with the strict-claims state: can the player to move claim a missed alignment?
#[derive(Clone)]
struct Pos {
    cell: [i8; 16], // the piece on each square (square = (row-1)*4 + column), -1 when empty
    hand: i8,       // the piece to place, -1 when the player to move only gives
    avail: u16,     // pieces neither on the board nor in hand
    claimable: bool,
    over: bool,
}

impl Pos {
    fn start() -> Pos {
        Pos {
            cell: [-1; 16],
            hand: -1,
            avail: 0xFFFF,
            claimable: false,
            over: false,
        }
    }

    fn full(&self) -> bool {
        self.cell.iter().all(|&c| c >= 0)
    }

    fn wins_with(&mut self, v: &Variant, sq: usize) -> bool {
        self.cell[sq] = self.hand;
        let w = v.completes(&self.cell, sq);
        self.cell[sq] = -1;
        w
    }

    /// Reads "BOARD HAND" (SPEC 2.3).
    fn parse(v: &Variant, board: &str, hand: &str) -> Result<Pos, String> {
        let mut p = Pos::start();
        let rows: Vec<&str> = board.split('/').collect();
        if rows.len() != 4 || rows.iter().any(|r| r.chars().count() != 4) {
            return Err("the board does not have 4 rows of 4 cells".into());
        }
        let mut used: u16 = 0;
        for (i, row) in rows.iter().enumerate() {
            for (c, ch) in row.chars().enumerate() {
                if ch == '.' {
                    continue;
                }
                let piece = ch.to_digit(16).ok_or("a cell is not '.' or a hex digit")? as i8;
                if used >> piece & 1 == 1 {
                    return Err("a piece appears twice".into());
                }
                used |= 1 << piece;
                p.cell[(3 - i) * 4 + c] = piece; // the first row written is row 4
            }
        }
        if hand != "-" {
            let piece = match hand.chars().collect::<Vec<_>>()[..] {
                [ch] => ch
                    .to_digit(16)
                    .ok_or("the piece in hand is not one hex digit or '-'")?
                    as i8,
                _ => return Err("the piece in hand is not one hex digit or '-'".into()),
            };
            if used >> piece & 1 == 1 {
                return Err("the piece in hand is also on the board".into());
            }
            if p.full() {
                return Err("the board is full and a piece is in hand".into());
            }
            used |= 1 << piece;
            p.hand = piece;
        }
        p.avail = !used;
        // An alignment on the board ended an auto game; under strict claims it is dead (never called).
        let aligned = (0..16).any(|s| p.cell[s] >= 0 && v.completes(&p.cell, s));
        if !v.strict && aligned {
            if p.hand >= 0 {
                return Err(
                    "the board already shows a winning group, so no piece can be in hand".into(),
                );
            }
            p.over = true;
        } else if p.full() {
            p.over = true;
        }
        Ok(p)
    }

    /// Plays one turn token (SPEC 2.4), or says why it cannot be played.
    fn apply(&mut self, v: &Variant, tok: &str) -> Result<(), String> {
        if self.over {
            return Err("the game is already over".into());
        }
        let b = tok.as_bytes();
        if tok == "!" {
            if !v.strict || !self.claimable {
                return Err("nothing to claim".into());
            }
            self.over = true;
            return Ok(());
        }
        if b.len() == 1 {
            let piece = (b[0] as char).to_digit(16).ok_or("not a turn token")? as i8;
            if self.hand >= 0 {
                return Err("a piece is in hand and must be placed".into());
            }
            if self.avail >> piece & 1 == 0 {
                return Err("that piece is not available".into());
            }
            self.hand = piece;
            self.avail &= !(1 << piece);
            self.claimable = false;
            return Ok(());
        }
        if b.len() > 3 || !(b'a'..=b'd').contains(&b[0]) || !(b'1'..=b'4').contains(&b[1]) {
            return Err("not a turn token".into());
        }
        let sq = (b[1] - b'1') as usize * 4 + (b[0] - b'a') as usize;
        let call = b.len() == 3 && b[2] == b'!';
        let give = if b.len() == 3 && !call {
            (b[2] as char).to_digit(16).ok_or("not a turn token")? as i8
        } else {
            -1
        };
        if self.hand < 0 {
            return Err("no piece in hand to place".into());
        }
        if self.cell[sq] >= 0 {
            return Err("the square is occupied".into());
        }
        self.cell[sq] = self.hand;
        self.hand = -1;
        self.claimable = false;
        let win = v.completes(&self.cell, sq);
        if call {
            if !win {
                return Err("false QUARTO! call".into());
            }
            self.over = true;
            return Ok(());
        }
        if win && !v.strict {
            if give >= 0 && self.avail >> give & 1 == 0 {
                return Err("the given piece is not available".into()); // SPEC 1.1: ignored, if it exists
            }
            self.over = true; // auto: the placement wins; a piece given with it is ignored
            return Ok(());
        }
        if self.full() {
            if give >= 0 {
                return Err("the board is full: no piece can be given".into());
            }
            self.over = true; // strict: an uncalled last placement is a draw
            return Ok(());
        }
        if give < 0 {
            return Err("a piece must be given".into());
        }
        if self.avail >> give & 1 == 0 {
            return Err("the given piece is not available".into());
        }
        self.hand = give;
        self.avail &= !(1 << give);
        self.claimable = win; // strict: a missed alignment the opponent may claim next turn
        Ok(())
    }
}

fn square_name(s: usize) -> String {
    format!(
        "{}{}",
        (b'a' + (s & 3) as u8) as char,
        (b'1' + (s >> 2) as u8) as char
    )
}

// ---- search ------------------------------------------------------------------------------------------------

/// A turn that wins at once, if there is one: a claim, or a winning placement (called under strict claims).
fn winning_turn(p: &mut Pos, v: &Variant) -> Option<String> {
    if p.claimable {
        return Some("!".into());
    }
    if p.hand < 0 {
        return None;
    }
    (0..16)
        .find(|&s| p.cell[s] < 0 && p.wins_with(v, s))
        .map(|s| square_name(s) + if v.strict { "!" } else { "" })
}

/// Every turn when there is no win (then no placement completes a group).
fn all_turns(p: &Pos) -> Vec<String> {
    let gives: Vec<usize> = (0..16).filter(|&k| p.avail >> k & 1 == 1).collect();
    if p.hand < 0 {
        return gives
            .iter()
            .map(|&k| (HEX[k] as char).to_string())
            .collect();
    }
    let mut out = Vec::new();
    for s in (0..16).filter(|&s| p.cell[s] < 0) {
        if gives.is_empty() {
            out.push(square_name(s)); // the last square: nothing left to give
        }
        for &k in &gives {
            out.push(format!("{}{}", square_name(s), HEX[k] as char));
        }
    }
    out
}

struct Search<'a> {
    variant: &'a Variant,
    deadline: Instant,
    node_limit: u64,
    nodes: u64,
}

struct Timeout;

impl Search<'_> {
    /// The score of `p` for the player to move: WIN - ply for a win at `ply`, 0 for a draw or beyond the depth.
    fn negamax(
        &mut self,
        p: &mut Pos,
        depth: u32,
        mut alpha: i32,
        beta: i32,
        ply: i32,
    ) -> Result<i32, Timeout> {
        if winning_turn(p, self.variant).is_some() {
            return Ok(WIN - ply);
        }
        if depth <= 1 {
            return Ok(0);
        }
        self.nodes += 1;
        if self.nodes >= self.node_limit || Instant::now() >= self.deadline
        // a clock read costs far less than a node
        {
            return Err(Timeout);
        }
        let mut best = -WIN - 1;
        for tok in all_turns(p) {
            let mut child = p.clone();
            child
                .apply(self.variant, &tok)
                .expect("a generated turn is legal");
            let score = if child.over {
                0
            } else {
                -self.negamax(&mut child, depth - 1, -beta, -alpha, ply + 1)?
            };
            best = best.max(score);
            alpha = alpha.max(best);
            if alpha >= beta {
                break;
            }
        }
        Ok(best)
    }
}

/// The best turn found within the depth, the time and the nodes, deepening one turn at a time.
fn search(
    p: &mut Pos,
    v: &Variant,
    max_depth: u32,
    deadline: Instant,
    node_limit: u64,
    out: &mut impl Write,
) -> String {
    if let Some(win) = winning_turn(p, v) {
        say(out, &format!("info depth 1 score win 1 pv {win}"));
        return win;
    }
    let mut turns = all_turns(p);
    // A random order (equal turns differ from game to game): a xorshift seeded from the clock.
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut seed = clock ^ (std::process::id() as u64) << 32 | 1;
    for i in (1..turns.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        turns.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    let mut s = Search {
        variant: v,
        deadline,
        node_limit,
        nodes: 0,
    };
    for depth in 2..=max_depth {
        let mut scores = Vec::with_capacity(turns.len());
        for tok in &turns {
            if depth > 2 && Instant::now() >= deadline {
                return turns.swap_remove(0); // depth 2 always ends: it sees every gift that loses
            }
            let mut child = p.clone();
            child.apply(v, tok).expect("a generated turn is legal");
            let score = if child.over {
                Ok(0)
            } else {
                s.negamax(&mut child, depth - 1, -WIN - 1, WIN + 1, 1)
                    .map(|x| -x)
            };
            match score {
                Ok(x) => scores.push(x),
                Err(Timeout) => return turns.swap_remove(0), // an unfinished depth is not trusted
            }
        }
        let best = (0..turns.len()).max_by_key(|&i| scores[i]).unwrap_or(0);
        turns.swap(0, best); // the best turn first at the next depth
        let value = scores[best];
        // SPEC 5.3: a proved result as win N or loss N (N turns to the end, this one included), else a value.
        if value.abs() >= WIN - 100 {
            let kind = if value > 0 { "win" } else { "loss" };
            say(
                out,
                &format!(
                    "info depth {depth} score {kind} {} nodes {} pv {}",
                    WIN - value.abs() + 1,
                    s.nodes,
                    turns[0]
                ),
            );
            break;
        }
        say(
            out,
            &format!(
                "info depth {depth} score value 0 nodes {} pv {}",
                s.nodes, turns[0]
            ),
        );
    }
    turns.swap_remove(0)
}

// ---- commands ----------------------------------------------------------------------------------------------

/// Writes one line and flushes it (SPEC 3.2: the arena waits for it).
fn say(out: &mut impl Write, line: &str) {
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

struct Engine {
    variant: Variant,
    pos: Option<Pos>, // None until a valid `position`, and after one that could not be read (SPEC 4.4)
    held: Option<String>, // the turn of a `go infinite`, sent when `stop` comes
    depth: u32,
}

impl Engine {
    fn new() -> Engine {
        Engine {
            variant: Variant::new(false, 0xF, false),
            pos: None,
            held: None,
            depth: DEPTH_DEFAULT,
        }
    }

    /// Handles one line; false on `quit`.
    fn handle(&mut self, line: &str, out: &mut impl Write) -> bool {
        let w: Vec<&str> = line.split([' ', '\t']).filter(|x| !x.is_empty()).collect();
        let Some(&cmd) = w.first() else { return true }; // empty lines are ignored
        if w.len() > 1 && ["isready", "stop", "quit"].contains(&cmd) {
            say(out, &format!("error {cmd} takes no arguments")); // SPEC 4.9: a word too many is malformed
            return true;
        }
        if self.held.is_some() && ["setoption", "newgame", "position", "go"].contains(&cmd) {
            say(
                out,
                &format!("error {cmd} a search is running (send stop first)"),
            ); // SPEC 4.10
            return true;
        }
        match cmd {
            "uqi" => self.uqi(&w, out),
            "isready" => say(out, "readyok"),
            "setoption" => self.setoption(&w, out),
            "newgame" => self.newgame(&w, out),
            "position" => self.position(&w, out),
            "go" => self.go(&w, out),
            "stop" => {
                if let Some(turn) = self.held.take() {
                    say(out, &format!("turn {turn}")); // otherwise no search runs: nothing to stop (SPEC 4.6)
                }
            }
            "quit" => return false,
            _ => say(out, &format!("error unknown command {cmd}")),
        }
        true
    }

    /// A new session (SPEC 4.1): the handshake, and nothing kept of the last one.
    fn uqi(&mut self, w: &[&str], out: &mut impl Write) {
        let version_ok =
            |s: &str| s.bytes().all(|b| b.is_ascii_digit()) && s.bytes().any(|b| b != b'0');
        if w.len() > 2 || (w.len() == 2 && !version_ok(w[1])) {
            return say(out, "error uqi takes one version number, at least 1");
        }
        *self = Engine::new();
        say(out, "id name My Rust bot 0.1");
        say(out, "id author me");
        say(
            out,
            &format!("option name Depth type spin min 1 max {DEPTH_MAX} default {DEPTH_DEFAULT}"),
        );
        say(out, "uqiok 1");
    }

    fn setoption(&mut self, w: &[&str], out: &mut impl Write) {
        if w.len() < 3 || w[1] != "name" {
            return say(out, "error setoption needs 'name ID [value VALUE]'");
        }
        if !w[2].eq_ignore_ascii_case("Depth") {
            return say(out, &format!("error setoption unknown option {}", w[2]));
            // option ids: any case
        }
        if w.len() != 5 || w[3] != "value" {
            return say(
                out,
                "error setoption Depth needs 'value N' with one integer",
            );
        }
        // SPEC 4.2: a spin value is digits with an optional '-' (parse alone would also take "+5").
        let digits = w[4].strip_prefix('-').unwrap_or(w[4]);
        match w[4].parse::<i64>() {
            Ok(n)
                if !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && (1..=DEPTH_MAX as i64).contains(&n) =>
            {
                self.depth = n as u32 // success: no reply (SPEC 4.2)
            }
            _ => say(
                out,
                &format!(
                    "error setoption Depth value {} is not an integer in 1..{DEPTH_MAX}",
                    w[4]
                ),
            ),
        }
    }

    /// `newgame shapes S attributes A claims C`, the fields in any order (SPEC 4.3).
    fn newgame(&mut self, w: &[&str], out: &mut impl Write) {
        let mut fields: [Option<String>; 3] = [None, None, None];
        let mut i = 1;
        while i < w.len() {
            let Some(k) = ["shapes", "attributes", "claims"]
                .iter()
                .position(|f| *f == w[i])
            else {
                return say(out, &format!("error newgame unknown field {}", w[i]));
            };
            if fields[k].is_some() {
                return say(out, &format!("error newgame {} given twice", w[i]));
            }
            let Some(value) = w.get(i + 1) else {
                return say(out, &format!("error newgame {} needs a value", w[i]));
            };
            fields[k] = Some(value.to_ascii_lowercase());
            i += 2;
        }
        let [Some(shapes), Some(attributes), Some(claims)] = fields else {
            return say(out, "error newgame needs 'shapes S attributes A claims C'");
        };
        let mut attrs = 0u8;
        for a in attributes.split(',') {
            let bit = match a {
                "color" => 8,
                "shape" => 4,
                "height" => 2,
                "fill" => 1,
                "" => {
                    return say(
                        out,
                        &format!("error newgame attributes {attributes}: an attribute is empty"),
                    )
                }
                _ => return say(out, &format!("error newgame unsupported attribute {a}")),
            };
            if attrs & bit != 0 {
                return say(
                    out,
                    &format!("error newgame attributes {attributes}: {a} is named twice"),
                );
            }
            attrs |= bit;
        }
        let advanced = match shapes.as_str() {
            "standard" => false,
            "advanced" => true,
            _ => return say(out, &format!("error newgame unsupported shapes {shapes}")),
        };
        let strict = match claims.as_str() {
            "auto" => false,
            "strict" => true,
            _ => return say(out, &format!("error newgame unsupported claims {claims}")),
        };
        self.variant = Variant::new(advanced, attrs, strict);
        self.pos = None;
    }

    /// `position startpos|BOARD HAND [turns ...]`: the whole game, rebuilt every time (SPEC 4.4).
    fn position(&mut self, w: &[&str], out: &mut impl Write) {
        self.pos = None; // an invalid position leaves none (SPEC 4.4)
        let (mut p, rest) = if w.get(1) == Some(&"startpos") {
            (Pos::start(), &w[2..]) // a keyword: lower case only
        } else if w.len() >= 3 {
            match Pos::parse(&self.variant, w[1], w[2]) {
                Ok(p) => (p, &w[3..]),
                Err(e) => return say(out, &format!("error position {e}")),
            }
        } else {
            return say(out, "error position needs 'startpos' or 'BOARD HAND'");
        };
        if let Some(word) = rest.first() {
            if *word != "turns" {
                return say(out, "error position expected 'turns' after the position");
            }
        }
        for tok in rest.iter().skip(1) {
            if let Err(e) = p.apply(&self.variant, &tok.to_ascii_lowercase()) {
                return say(out, &format!("error position turn {tok}: {e}"));
            }
        }
        self.pos = Some(p);
    }

    /// `go [time MS] [inc MS] [otime MS] [oinc MS] [movestogo N] [movetime MS] [depth N] [nodes N] [infinite]`.
    fn go(&mut self, w: &[&str], out: &mut impl Write) {
        const NAMES: [&str; 9] = [
            "time",
            "inc",
            "otime",
            "oinc",
            "movestogo",
            "movetime",
            "depth",
            "nodes",
            "infinite",
        ];
        let mut value: [Option<u64>; 9] = [None; 9];
        let mut i = 1;
        while i < w.len() {
            let Some(k) = NAMES.iter().position(|n| *n == w[i]) else {
                return say(out, &format!("error go unknown limit {}", w[i]));
            };
            if value[k].is_some() {
                return say(out, &format!("error go {} given twice", w[i]));
            }
            if k == 8 {
                value[k] = Some(1);
                i += 1;
                continue;
            }
            let text = w.get(i + 1).copied().unwrap_or("");
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return say(out, &format!("error go {} needs a whole number", NAMES[k]));
            }
            let n = match text.parse::<u128>() {
                Ok(n) if n <= i64::MAX as u128 => n as u64,
                _ => return say(out, &format!("error go {} is above 2^63 - 1", NAMES[k])),
            };
            if k >= 4 && n == 0 {
                return say(out, &format!("error go {} needs at least 1", NAMES[k]));
            }
            value[k] = Some(n);
            i += 2;
        }
        let Some(p) = self.pos.as_mut() else {
            return say(out, "error go no valid position to search");
        };
        if p.over {
            return say(out, "error go the game is over: no turn to play");
        }
        // The time to spend (SPEC 4.5): the turn's limit (movetime, or the fair share of the clock: the time left
        // over the turns still to play, plus 3/4 of inc, at most a quarter of the time left; with both, the
        // smaller), less the move overhead kept back for the pipe and a loaded machine (the arena counts both
        // against the bot): 50 ms times the load f (load_factor), at most f / (1 + f) of the limit.
        let mut budget = MAX_SEARCH_MS;
        let mut limit = value[5];
        if let Some(time) = value[0] {
            let empty = p.cell.iter().filter(|&&c| c < 0).count() as u64;
            let mut turns_left = if p.hand >= 0 {
                empty.div_ceil(2)
            } else {
                1 + empty / 2
            };
            if let Some(m) = value[4] {
                turns_left = turns_left.min(m);
            }
            let inc = value[1].unwrap_or(0);
            let share = (time / turns_left.max(1)).saturating_add(inc / 4 * 3).min(time / 4);
            limit = Some(limit.map_or(share, |movetime| movetime.min(share)));
        }
        if let Some(limit) = limit {
            let f = load_factor();
            let kept = (MOVE_OVERHEAD_MS * f).min(limit as f64 * f / (1.0 + f));
            budget = budget.min(limit - kept as u64);
        }
        let deadline = Instant::now() + Duration::from_millis(budget.max(1));
        let depth = value[6].map_or(self.depth, |d| d.min(DEPTH_MAX as u64) as u32);
        let variant = self.variant.clone();
        let turn = search(
            p,
            &variant,
            depth,
            deadline,
            value[7].unwrap_or(u64::MAX),
            out,
        );
        if value[8].is_some() {
            self.held = Some(turn); // go infinite: the turn waits for stop
        } else {
            say(out, &format!("turn {turn}"));
        }
    }
}

fn main() {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut engine = Engine::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bytes, not a String: a line that is not UTF-8 must not end the bot; it is answered like any other.
        match input.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return, // end of input: exit (SPEC 3.2)
            Ok(_) => {}
        }
        while buf.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            buf.pop();
        }
        if buf.len() > MAX_LINE {
            say(&mut out, "error line too long"); // SPEC 3.1: say so, and carry on
            continue;
        }
        let line = String::from_utf8_lossy(&buf);
        if !engine.handle(&line, &mut out) {
            return;
        }
    }
}
