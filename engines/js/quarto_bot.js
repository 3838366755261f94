#!/usr/bin/env node
// quarto_bot.js - a greedy Quarto engine speaking UQI version 1 over stdin/stdout.
//
// Written from SPEC.md alone, as an example for bot authors. One file, Node.js 20, no npm packages:
//
//     node quarto_bot.js
//
// Play: it wins when it can (a winning placement, a QUARTO! call, or the claim of a missed alignment), never
// gives a piece that lets the opponent win at once when a safe turn exists, and otherwise plays at random.
// It answers every `go` at once, whatever the limits.
//
// Why no worker thread: UQI asks for `readyok` and `stop` to be handled even during a search. This engine
// finishes every search inside the handler of the `go` line, before readline delivers the next line, so
// `isready` is answered at once and `stop` has nothing to stop. The one exception is `go infinite`: SPEC 4.5
// asks for its turn only after `stop`, so the bot computes it at once and holds it until then; while it holds a
// turn it is "searching", and refuses `position`, `go`, `newgame` and `setoption` (SPEC 4.10).
'use strict';

const readline = require('node:readline');

const MAX_LINE_BYTES = 4096; // SPEC 3.1
const SEED_MAX = 2147483647;
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

function givesWin(p, piece) {
  for (let s = 0; s < 16; s++) if (p.cell[s] < 0 && winsWith(p, piece, s)) return true;
  return false;
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

// ---- randomness (mulberry32, seeded by the Seed option) -------------------------------------------------

let rngState = (Math.random() * 2 ** 32) >>> 0; // Seed 0, the default: a different game every run

function rngSeed(seed) {
  rngState = (seed * 0x9e3779b9 + 0x6d2b79f5) >>> 0;
}

function rngBelow(n) {
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) % n;
}

const pick = (items) => items[rngBelow(items.length)];
const squareName = (s) => 'abcd'[s & 3] + '1234'[s >> 2];

// ---- search: greedy -------------------------------------------------------------------------------------

function chooseTurn(p) {
  if (p.claimable) return '!'; // strict: the opponent left an alignment uncalled; claiming it wins
  const pieces = [];
  for (let k = 0; k < 16; k++) if (p.avail & (1 << k)) pieces.push(k);
  const empty = [];
  for (let s = 0; s < 16; s++) if (p.cell[s] < 0) empty.push(s);
  if (p.hand < 0) {
    const safe = pieces.filter((k) => !givesWin(p, k));
    return HEX[pick(safe.length ? safe : pieces)];
  }
  const wins = empty.filter((s) => winsWith(p, p.hand, s));
  if (wins.length) return squareName(pick(wins)) + (strictClaims ? '!' : '');
  if (pieces.length === 0) return squareName(empty[0]); // the last square: nothing is left to give
  // Place and give: first every pair whose gift leaves the opponent no winning square, else any pair.
  const safe = [];
  const any = [];
  for (const s of empty) {
    p.cell[s] = p.hand;
    for (const k of pieces) {
      any.push([s, k]);
      if (!givesWin(p, k)) safe.push([s, k]);
    }
    p.cell[s] = -1;
  }
  const [s, k] = pick(safe.length ? safe : any);
  return squareName(s) + HEX[k];
}

// ---- commands -------------------------------------------------------------------------------------------

let position = startPosition();
let positionOk = true; // false after a `position` command that could not be read
let held = null; // the turn of a `go infinite`, sent when `stop` comes

function send(line) {
  // Writes to a pipe are synchronous on Linux, so each line is on its way before the next command is read.
  process.stdout.write(line + '\n');
}

function cmdSetoption(w) {
  if (w.length < 3 || w[1] !== 'name') return send("error setoption needs 'name ID [value VALUE]'");
  if (w[2].toLowerCase() !== 'seed') return send(`error setoption unknown option ${w[2]}`);
  if (w.length !== 5 || w[3] !== 'value') return send("error setoption Seed needs 'value N' with one integer");
  const v = /^\d+$/.test(w[4]) ? Number(w[4]) : -1; // SPEC 4.2: digits only, no '+' or '_'
  if (v < 0 || v > SEED_MAX) return send(`error setoption Seed value ${w[4]} is not an integer in 0..${SEED_MAX}`);
  rngSeed(v);
}

function cmdNewgame(w) {
  // SPEC 4.3: a field missing, repeated or unknown, or an attribute empty or named twice, is malformed; a value
  // that is not one of the known ones is a variant this bot cannot play. Either way the variant stays as it was.
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
    if (a === '') return send(`error newgame attributes ${fields.attributes}: an attribute is empty`);
    if (!Object.hasOwn(bits, a)) {
      return send(`error newgame unsupported attribute ${a}: expected color, shape, height, fill`);
    }
    if (attrs & bits[a]) return send(`error newgame attributes ${fields.attributes}: ${a} is named twice`);
    attrs |= bits[a];
  }
  if (!['standard', 'advanced'].includes(fields.shapes)) {
    return send(`error newgame unsupported shapes ${fields.shapes}: expected standard or advanced`);
  }
  if (!['auto', 'strict'].includes(fields.claims)) {
    return send(`error newgame unsupported claims ${fields.claims}: expected auto or strict`);
  }
  setVariant(fields.shapes === 'advanced', attrs, fields.claims === 'strict');
  position = startPosition();
  positionOk = true;
}

function cmdPosition(w) {
  positionOk = false;
  let i;
  try {
    if (w.length >= 2 && w[1] === 'startpos') { // a keyword: lower case only (SPEC 2.3)
      position = startPosition();
      i = 2;
    } else if (w.length >= 3) {
      position = parsePosition(w[1], w[2]);
      i = 3;
    } else {
      return send("error position needs 'startpos' or 'BOARD HAND'");
    }
  } catch (e) {
    return send(`error position ${e.message}`);
  }
  if (i < w.length && w[i] !== 'turns') return send("error position expected 'turns' after the position");
  for (const tok of w.slice(i + 1)) {
    try {
      applyTurn(position, tok.toLowerCase());
    } catch (e) {
      return send(`error position turn ${tok}: ${e.message}`);
    }
  }
  positionOk = true;
}

function cmdGo(w) {
  const limits = ['time', 'inc', 'otime', 'oinc', 'movestogo', 'movetime', 'depth', 'nodes', 'infinite'];
  // The limits do not matter, since the answer is instant; but a malformed go is refused (SPEC 4.5): an unknown
  // or repeated limit, or a value that is not digits (at least 1 for movestogo, movetime, depth and nodes).
  const seen = new Set();
  for (let i = 1; i < w.length; i++) {
    const key = w[i];
    if (!limits.includes(key)) return send(`error go unknown limit ${key}`);
    if (seen.has(key)) return send(`error go ${key} given twice`);
    seen.add(key);
    if (key === 'infinite') continue;
    const value = w[++i] ?? '';
    if (!/^\d+$/.test(value)) return send(`error go ${key} needs a whole number`);
    if (BigInt(value) > 9223372036854775807n) return send(`error go ${key} is above 2^63 - 1`); // SPEC 4.5
    if (['movestogo', 'movetime', 'depth', 'nodes'].includes(key) && Number(value) < 1) {
      return send(`error go ${key} needs at least 1`);
    }
  }
  if (!positionOk) return send('error go the last position was invalid');
  if (position.over) return send('error go the game is over: no turn to play');
  const turn = chooseTurn(position);
  if (seen.has('infinite')) held = turn; // the turn waits for stop
  else send(`turn ${turn}`);
}

function handle(line) {
  if (Buffer.byteLength(line, 'utf8') > MAX_LINE_BYTES) return send(`error line longer than ${MAX_LINE_BYTES} bytes`);
  const w = line.split(/[ \t]+/).filter((x) => x.length > 0); // readline already removed the \n or \r\n
  if (w.length === 0) return; // empty lines are ignored
  if (w.length > 1 && ['isready', 'stop', 'quit'].includes(w[0])) {
    return send(`error ${w[0]} takes no arguments`); // SPEC 4.9: a word too many makes a command malformed
  }
  if (held !== null && ['setoption', 'newgame', 'position', 'go'].includes(w[0])) {
    return send(`error ${w[0]} a search is running (send stop first)`);
  }
  switch (w[0]) {
    case 'uqi':
      if (w.length > 2 || (w.length === 2 && !/^0*[1-9][0-9]*$/.test(w[1]))) {
        return send('error uqi takes one version number, at least 1'); // SPEC 4.1
      }
      held = null; // a new session abandons a held search without its turn (SPEC 4.10)
      setVariant(false, 0xf, false); // and keeps nothing of the last (SPEC 4.1): the standard game, no position
      positionOk = false;
      send('id name Greedy JS 1.0');
      send('id author quarto-arena');
      send('option name Seed type spin min 0 max 2147483647 default 0');
      return send('uqiok 1');
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
      if (held !== null) send(`turn ${held}`); // otherwise the search already ended: nothing to stop
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
input.on('close', () => process.exit(0)); // end of input: SPEC 3.2 says exit
