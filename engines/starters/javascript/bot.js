#!/usr/bin/env node
// bot.js - a Quarto bot speaking UQI, the Universal Quarto Interface (SPEC.md), over standard input and output.
// Written by `quarto-arena new-bot javascript`: a starting point. One file, Node.js 18 or later, no npm packages.
//
//     node bot.js
//
// Play: a small alpha-beta search over turns (a turn places the piece in hand and gives one, SPEC 2.4),
// deepening one turn at a time until its time is spent; it finds every win within its depth and never gives a
// piece that wins at once when a safe one exists. The option Depth caps the search (a `go depth N` replaces it).
//
// Why no worker thread: UQI wants `isready` answered and `stop` obeyed during a search (SPEC 4.7). This bot
// searches at most MAX_SEARCH_MS inside the handler of the `go` line, before readline delivers the next line, so
// both wait no longer than that. `go infinite` wants its turn only after `stop` (SPEC 4.5): the bot searches as
// usual, then holds the turn until `stop`; while it holds one it refuses `position`, `go`, `newgame` and
// `setoption` (SPEC 4.10). A bot that searches longer must search in a worker_thread, or yield between nodes.
'use strict';

const os = require('node:os');
const readline = require('node:readline');

const MAX_LINE_BYTES = 4096; // SPEC 3.1
const MAX_SEARCH_MS = 250; // the longest search, whatever the limits: see "Why no worker thread"
const MOVE_OVERHEAD_MS = 50; // SPEC 4.5: kept back from every limit on a loaded machine, times the load
const DEPTH_DEFAULT = 3;
const DEPTH_MAX = 16;
const WIN = 1000;
const HEX = '0123456789abcdef';

// ---- variant --------------------------------------------------------------------------------------------

let lines = []; // winning groups, each a list of 4 squares (square = (row-1)*4 + column)
let attrMask = 0xf; // piece bits that count for a win
let strictClaims = false; // a win must be called ("b3!"); a missed one may be claimed ("!")

function setVariant(advanced, attrs, strict) {
  lines = [];
  for (let r = 0; r < 4; r++) lines.push([0, 1, 2, 3].map((c) => 4 * r + c));
  for (let c = 0; c < 4; c++) lines.push([0, 1, 2, 3].map((r) => 4 * r + c));
  lines.push([0, 5, 10, 15], [3, 6, 9, 12]);
  if (advanced) {
    for (let r = 0; r < 3; r++) {
      for (let c = 0; c < 3; c++) {
        const s = 4 * r + c;
        lines.push([s, s + 1, s + 4, s + 5]);
      }
    }
  }
  attrMask = attrs;
  strictClaims = strict;
}

// ---- position -------------------------------------------------------------------------------------------

function startPosition() {
  // cell: piece 0..15 or -1; hand: piece to place or -1; avail: pieces neither placed nor in hand.
  return { cell: new Array(16).fill(-1), hand: -1, avail: 0xffff, claimable: false, over: false };
}

const isFull = (p) => p.cell.every((x) => x >= 0);

// Does some full group through square `sq` share a counted attribute?
function completes(cell, sq) {
  for (const group of lines) {
    if (!group.includes(sq)) continue;
    let all = 0xf;
    let none = 0xf;
    let filled = true;
    for (const s of group) {
      if (cell[s] < 0) {
        filled = false;
        break;
      }
      all &= cell[s];
      none &= ~cell[s];
    }
    if (filled && ((all | none) & attrMask) !== 0) return true;
  }
  return false;
}

function winsWith(p, piece, sq) {
  p.cell[sq] = piece;
  const w = completes(p.cell, sq);
  p.cell[sq] = -1;
  return w;
}

const hexval = (ch) => (ch.length === 1 ? HEX.indexOf(ch.toLowerCase()) : -1);

// Reads "BOARD HAND" (SPEC 2.3); throws an Error saying why it is invalid.
function parsePosition(board, hand) {
  const p = startPosition();
  const rows = board.split('/');
  if (rows.length !== 4 || rows.some((r) => r.length !== 4)) throw new Error('the board does not have 4 rows of 4 cells');
  let used = 0;
  rows.forEach((row, i) => {
    for (let c = 0; c < 4; c++) {
      if (row[c] === '.') continue;
      const v = hexval(row[c]);
      if (v < 0) throw new Error("a cell is not '.' or a hex digit");
      if (used & (1 << v)) throw new Error('a piece appears twice');
      used |= 1 << v;
      p.cell[(3 - i) * 4 + c] = v; // the first row written is row 4
    }
  });
  if (hand !== '-') {
    const v = hexval(hand);
    if (v < 0) throw new Error("the piece in hand is not one hex digit or '-'");
    if (used & (1 << v)) throw new Error('the piece in hand is also on the board');
    if (isFull(p)) throw new Error('the board is full and a piece is in hand');
    used |= 1 << v;
    p.hand = v;
  }
  p.avail = 0xffff & ~used;
  // An alignment already on the board ended an auto game; under strict claims it is dead (never called).
  const aligned = p.cell.some((x, s) => x >= 0 && completes(p.cell, s));
  if (!strictClaims && aligned) {
    if (p.hand >= 0) throw new Error('the board already shows a winning group, so no piece can be in hand');
    p.over = true;
  } else if (isFull(p)) {
    p.over = true;
  }
  return p;
}

// Applies one turn token (SPEC 2.4) to p in place; throws an Error saying why it cannot be played.
function applyTurn(p, tok) {
  if (p.over) throw new Error('the game is already over');
  if (tok === '!') {
    if (!strictClaims || !p.claimable) throw new Error('nothing to claim');
    p.over = true;
    return;
  }
  if (tok.length === 1) {
    const v = hexval(tok);
    if (v < 0) throw new Error('not a turn token');
    if (p.hand >= 0) throw new Error('a piece is in hand and must be placed');
    if (!(p.avail & (1 << v))) throw new Error('that piece is not available');
    p.hand = v;
    p.avail &= ~(1 << v);
    p.claimable = false;
    return;
  }
  const m = /^([a-d])([1-4])([0-9a-f!]?)$/.exec(tok);
  if (!m) throw new Error('not a turn token');
  const sq = (Number(m[2]) - 1) * 4 + 'abcd'.indexOf(m[1]);
  const call = m[3] === '!';
  const give = m[3] && !call ? hexval(m[3]) : -1;
  if (p.hand < 0) throw new Error('no piece in hand to place');
  if (p.cell[sq] >= 0) throw new Error('the square is occupied');
  p.cell[sq] = p.hand;
  p.hand = -1;
  p.claimable = false;
  const win = completes(p.cell, sq);
  if (call) {
    if (!win) throw new Error('false QUARTO! call');
    p.over = true;
    return;
  }
  if (win && !strictClaims) {
    if (give >= 0 && !(p.avail & (1 << give))) throw new Error('the given piece is not available'); // SPEC 1.1
    p.over = true; // auto: the placement wins; a piece given with it is ignored
    return;
  }
  if (isFull(p)) {
    if (give >= 0) throw new Error('the board is full: no piece can be given');
    p.over = true; // strict: an uncalled last placement is a draw
    return;
  }
  if (give < 0) throw new Error('a piece must be given');
  if (!(p.avail & (1 << give))) throw new Error('the given piece is not available');
  p.hand = give;
  p.avail &= ~(1 << give);
  p.claimable = win; // strict: a missed alignment the opponent may claim next turn
}

// ---- search ---------------------------------------------------------------------------------------------

const clone = (p) => ({ ...p, cell: p.cell.slice() });
const squareName = (s) => 'abcd'[s & 3] + '1234'[s >> 2];

// The turns worth searching, as tokens: a claim or a winning placement when there is one (it ends the game), else
// every placement with every give. A completing placement is always called (strict) or played alone (auto), never
// played with a give: that would only hand the opponent a claim.
function genTurns(p) {
  if (p.claimable) return ['!'];
  const out = [];
  if (p.hand < 0) {
    for (let k = 0; k < 16; k++) if (p.avail & (1 << k)) out.push(HEX[k]);
    return out;
  }
  for (let s = 0; s < 16; s++) {
    if (p.cell[s] < 0 && winsWith(p, p.hand, s)) return [squareName(s) + (strictClaims ? '!' : '')];
  }
  for (let s = 0; s < 16; s++) {
    if (p.cell[s] >= 0) continue;
    if (p.avail === 0) out.push(squareName(s)); // the last square: nothing left to give
    for (let k = 0; k < 16; k++) if (p.avail & (1 << k)) out.push(squareName(s) + HEX[k]);
  }
  return out;
}

class Abort extends Error {}

// One search: its deadline, node limit and node count.
class Search {
  constructor(deadline, nodeLimit) {
    this.deadline = deadline;
    this.nodeLimit = nodeLimit;
    this.nodes = 0;
  }

  // The score of the position after `tok` for the player who played it: WIN - ply for a win, 0 for a draw or
  // the horizon.
  score(p, tok, depth, alpha, beta, ply) {
    const child = clone(p);
    const placed = tok[0] >= 'a' && tok[0] <= 'd' && tok.length > 1 ? (Number(tok[1]) - 1) * 4 + 'abcd'.indexOf(tok[0]) : -1;
    applyTurn(child, tok);
    if (child.over) return tok === '!' || tok.endsWith('!') || (placed >= 0 && completes(child.cell, placed)) ? WIN - ply : 0;
    return depth <= 1 ? 0 : -this.negamax(child, depth - 1, -beta, -alpha, ply + 1);
  }

  negamax(p, depth, alpha, beta, ply) {
    // A clock read costs far less than a node.
    if (++this.nodes >= this.nodeLimit || Date.now() >= this.deadline) throw new Abort();
    let best = -WIN - 1;
    for (const tok of genTurns(p)) {
      best = Math.max(best, this.score(p, tok, depth, alpha, beta, ply));
      alpha = Math.max(alpha, best);
      if (alpha >= beta) break;
    }
    return best;
  }
}

// The best turn found within the depth, the time and the nodes, deepening one turn at a time.
function search(p, maxDepth, deadline, nodeLimit) {
  const turns = genTurns(p);
  for (let i = turns.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1)); // equal turns differ from game to game
    [turns[i], turns[j]] = [turns[j], turns[i]];
  }
  const s = new Search(deadline, nodeLimit);
  for (let depth = 1; depth <= maxDepth; depth++) {
    let best = -WIN - 1;
    let bestIndex = 0;
    try {
      turns.forEach((tok, i) => {
        if (depth > 2 && Date.now() >= deadline) throw new Abort(); // depth 2 always ends: it sees every losing gift
        const score = s.score(p, tok, depth, best, WIN + 1, 0);
        if (score > best) [best, bestIndex] = [score, i];
      });
    } catch (e) {
      if (e instanceof Abort) break; // an unfinished depth is not trusted
      throw e;
    }
    [turns[0], turns[bestIndex]] = [turns[bestIndex], turns[0]]; // the best turn first at the next depth
    // SPEC 5.3: a proved result as win N or loss N (N turns to the end, this one included), else a value.
    if (Math.abs(best) >= WIN - 100) {
      send(`info depth ${depth} score ${best > 0 ? 'win' : 'loss'} ${WIN - Math.abs(best) + 1} nodes ${s.nodes}`);
      break; // proved: a deeper search cannot change it
    }
    send(`info depth ${depth} score value 0 nodes ${s.nodes}`);
  }
  return turns[0];
}

// ---- commands -------------------------------------------------------------------------------------------

const send = (line) => process.stdout.write(line + '\n'); // synchronous to a pipe: no flush needed

let position = null; // null until a valid `position`, and after one that could not be read (SPEC 4.4)
let held = null; // the turn of a `go infinite`, sent when `stop` comes
let depthOption = DEPTH_DEFAULT;

// A new session (SPEC 4.1): the handshake, and nothing kept of the last one.
function cmdUqi(w) {
  if (w.length > 2 || (w.length === 2 && !/^0*[1-9]\d*$/.test(w[1]))) {
    return send('error uqi takes one version number, at least 1');
  }
  held = null;
  depthOption = DEPTH_DEFAULT;
  setVariant(false, 0xf, false);
  position = null;
  send('id name My JavaScript bot 0.1');
  send('id author me');
  send(`option name Depth type spin min 1 max ${DEPTH_MAX} default ${DEPTH_DEFAULT}`);
  send('uqiok 1');
}

function cmdSetoption(w) {
  if (w.length < 3 || w[1] !== 'name') return send("error setoption needs 'name ID [value VALUE]'");
  if (w[2].toLowerCase() !== 'depth') return send(`error setoption unknown option ${w[2]}`); // ids: any case
  if (w.length !== 5 || w[3] !== 'value') return send("error setoption Depth needs 'value N' with one integer");
  const v = /^-?\d+$/.test(w[4]) ? Number(w[4]) : NaN; // SPEC 4.2: digits with an optional '-'
  if (!(v >= 1 && v <= DEPTH_MAX)) return send(`error setoption Depth value ${w[4]} is not an integer in 1..${DEPTH_MAX}`);
  depthOption = v; // success: no reply (SPEC 4.2)
}

// `newgame shapes S attributes A claims C`, the fields in any order (SPEC 4.3).
function cmdNewgame(w) {
  const fields = {};
  for (let i = 1; i < w.length; i += 2) {
    if (!['shapes', 'attributes', 'claims'].includes(w[i])) return send(`error newgame unknown field ${w[i]}`);
    if (w[i] in fields) return send(`error newgame ${w[i]} given twice`);
    if (i + 1 >= w.length) return send(`error newgame ${w[i]} needs a value`);
    fields[w[i]] = w[i + 1].toLowerCase();
  }
  if (Object.keys(fields).length !== 3) return send("error newgame needs 'shapes S attributes A claims C'");
  const bits = { color: 8, shape: 4, height: 2, fill: 1 };
  let attrs = 0;
  for (const a of fields.attributes.split(',')) {
    if (a === '' || attrs & bits[a]) return send(`error newgame attributes ${fields.attributes}: empty or named twice`);
    if (!(a in bits)) return send(`error newgame unsupported attribute ${a}`);
    attrs |= bits[a];
  }
  if (!['standard', 'advanced'].includes(fields.shapes)) return send(`error newgame unsupported shapes ${fields.shapes}`);
  if (!['auto', 'strict'].includes(fields.claims)) return send(`error newgame unsupported claims ${fields.claims}`);
  setVariant(fields.shapes === 'advanced', attrs, fields.claims === 'strict');
  position = null;
}

// `position startpos|BOARD HAND [turns ...]`: the whole game, rebuilt every time (SPEC 4.4).
function cmdPosition(w) {
  position = null; // an invalid position leaves none (SPEC 4.4)
  let p;
  let i;
  try {
    if (w.length >= 2 && w[1] === 'startpos') { // a keyword: lower case only
      [p, i] = [startPosition(), 2];
    } else if (w.length >= 3) {
      [p, i] = [parsePosition(w[1], w[2]), 3];
    } else {
      return send("error position needs 'startpos' or 'BOARD HAND'");
    }
    if (i < w.length && w[i] !== 'turns') return send("error position expected 'turns' after the position");
    for (const tok of w.slice(i + 1)) applyTurn(p, tok.toLowerCase());
  } catch (e) {
    return send(`error position ${e.message}`);
  }
  position = p;
}

// `go [time MS] [inc MS] [otime MS] [oinc MS] [movestogo N] [movetime MS] [depth N] [nodes N] [infinite]`.
function cmdGo(w) {
  const names = ['time', 'inc', 'otime', 'oinc', 'movestogo', 'movetime', 'depth', 'nodes', 'infinite'];
  const go = {};
  for (let i = 1; i < w.length; i++) {
    const key = w[i];
    if (!names.includes(key)) return send(`error go unknown limit ${key}`);
    if (key in go) return send(`error go ${key} given twice`);
    if (key === 'infinite') {
      go.infinite = true;
      continue;
    }
    const value = w[++i] ?? '';
    if (!/^\d+$/.test(value)) return send(`error go ${key} needs a whole number`);
    if (BigInt(value) > 9223372036854775807n) return send(`error go ${key} is above 2^63 - 1`);
    go[key] = Number(value); // beyond 2^53 it is rounded: as good as endless
    if (['movestogo', 'movetime', 'depth', 'nodes'].includes(key) && go[key] < 1) {
      return send(`error go ${key} needs at least 1`);
    }
  }
  if (position === null) return send('error go no valid position to search');
  if (position.over) return send('error go the game is over: no turn to play');
  // The time to spend (SPEC 4.5): the turn's limit (movetime, or the fair share of the clock: the time left over the
  // turns still to play, plus 3/4 of inc, at most a quarter of the time left; with both, the smaller), less the move
  // overhead kept back for the pipe and a loaded machine (the arena counts both against the bot): 50 ms times the
  // load f (the last minute's load average per CPU, at least 1), at most f / (1 + f) of the limit.
  let budget = MAX_SEARCH_MS;
  if (go.movetime !== undefined || go.time !== undefined) {
    let limit = go.movetime ?? Infinity;
    if (go.time !== undefined) {
      const empty = position.cell.filter((x) => x < 0).length;
      let turnsLeft = position.hand >= 0 ? Math.ceil(empty / 2) : 1 + Math.floor(empty / 2);
      if (go.movestogo !== undefined) turnsLeft = Math.min(turnsLeft, go.movestogo);
      limit = Math.min(limit, go.time / turnsLeft + (3 * (go.inc ?? 0)) / 4, go.time / 4);
    }
    const cpus = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
    const f = Math.max(1, os.loadavg()[0] / cpus);
    budget = limit - Math.min(MOVE_OVERHEAD_MS * f, (limit * f) / (1 + f));
  }
  budget = Math.max(1, Math.min(budget, MAX_SEARCH_MS));
  const depth = Math.min(go.depth ?? depthOption, DEPTH_MAX);
  const turn = search(position, depth, Date.now() + budget, go.nodes ?? Infinity);
  if (go.infinite) held = turn; // the turn waits for stop
  else send(`turn ${turn}`);
}

function handle(line) {
  if (Buffer.byteLength(line, 'utf8') > MAX_LINE_BYTES) return send('error line too long'); // SPEC 3.1
  const w = line.split(/[ \t]+/).filter((x) => x !== '');
  if (w.length === 0) return; // empty lines are ignored
  if (w.length > 1 && ['isready', 'stop', 'quit'].includes(w[0])) {
    return send(`error ${w[0]} takes no arguments`); // SPEC 4.9: a word too many makes a command malformed
  }
  if (held !== null && ['setoption', 'newgame', 'position', 'go'].includes(w[0])) {
    return send(`error ${w[0]} a search is running (send stop first)`); // SPEC 4.10
  }
  switch (w[0]) {
    case 'uqi':
      return cmdUqi(w);
    case 'isready':
      return send('readyok');
    case 'setoption':
      return cmdSetoption(w);
    case 'newgame':
      return cmdNewgame(w);
    case 'position':
      return cmdPosition(w);
    case 'go':
      return cmdGo(w);
    case 'stop':
      if (held !== null) send(`turn ${held}`); // otherwise no search runs: nothing to stop (SPEC 4.6)
      held = null;
      return;
    case 'quit':
      return process.exit(0);
    default:
      return send(`error unknown command ${w[0]}`);
  }
}

setVariant(false, 0xf, false);
const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
input.on('line', (line) => handle(line.replace(/\r$/, '')));
input.on('close', () => process.exit(0)); // end of input: exit (SPEC 3.2)
