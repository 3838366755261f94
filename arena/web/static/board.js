/* quarto-arena: the analysis board's page (arena/board/). It draws with the viewer's code (static/quarto.js:
 * QuartoArena.Board, pieceIcon, plyToken) and knows no rules: every position comes from the board's server with its
 * legal turns, so a click can only ever send a turn the server listed (which checks it again).
 *
 * The page shows one line of play: a start (startpos or a position string) and the turns played from it, stepped
 * through with the buttons or the arrow keys. The line comes from the position field, from clicks on the board, from
 * a game opened from a file or a link, or from the board's game (followed live). For each position shown the page
 * asks the server (POST /api/position) and then keeps asking, while the solver still works on it, for the values
 * found since (each answer says what it has seen): the colours fill in as they come.
 *
 * Every string that comes from the server (engine names, info lines, details, errors) goes into the page as text. */
(function () {
  "use strict";

  const QA = window.QuartoArena;
  const SVG_NS = "http://www.w3.org/2000/svg";
  const HEX = "0123456789abcdef";
  const STARTPOS = "startpos";
  const HUMAN = "human";
  const token = document.body.dataset.token;
  const tab = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
  const $ = (id) => document.getElementById(id);

  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function button(label, title, action) {
    const b = el("button", null, label);
    b.type = "button";
    if (title) b.title = title;
    b.addEventListener("click", action);
    return b;
  }

  const squareName = (s) => "abcd"[s % 4] + String(Math.floor(s / 4) + 1);

  function valueText(v) {
    if (!v) return "…";
    return v[0] === "draw" ? "draw" : `${v[0]} in ${v[1]}`;
  }

  function shortValue(v) {
    return v[0] === "draw" ? "draw" : `${v[0] === "win" ? "W" : "L"}${v[1]}`;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Requests

  async function api(path, body, signal) {
    const r = await fetch(`/api/${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Board-Token": token },
      body: JSON.stringify(body),
      signal,
    });
    const text = await r.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new Error(text.trim() || `${r.status} ${r.statusText}`);
    }
    if (!r.ok) throw new Error(data && data.error ? data.error : `${r.status} ${r.statusText}`);
    return data;
  }

  function showError(id, error) {
    $(id).textContent = error ? error.message || String(error) : "";
  }

  // ---------------------------------------------------------------------------------------------------------------
  // State

  const state = {
    variant: "standard color,shape,height,fill auto",
    start: STARTPOS,
    tokens: [],
    k: 0,
    follow: false, // the line is the board's game, kept up to date
    info: null, // the position shown, as the server drew it
    solver: null, // the solver's values of its turns
    selected: -1, // a square chosen for the placement, waiting for the piece to give
    deep: false,
    generation: 0,
    engines: [],
    game: null, // the board's game (the "state" feed)
    opened: null, // a game opened from the list or a link
    find: null, // {marks, first, done} while looking for where the opened game's result changed
    setup: null, // {board, hand, piece} while setting up a position by hand
  };
  let controller = null;

  const board = new QA.Board($("board"));
  const labels = [];
  for (let s = 0; s < 16; s++) {
    const slot = board.slots[s];
    const text = document.createElementNS(SVG_NS, "text");
    text.setAttribute("class", "value-label");
    text.setAttribute("x", String(Number(slot.getAttribute("cx"))));
    text.setAttribute("y", String(Number(slot.getAttribute("cy")) + 34));
    board.svg.append(text);
    labels.push(text);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The line and the position shown

  // label: what the line is (an opened game's label), null for the person's own line.
  function setLine(start, tokens, k, variant, label) {
    state.label = label || null;
    state.start = start;
    state.tokens = tokens.slice();
    state.k = Math.max(0, Math.min(tokens.length, k));
    if (variant && variant !== state.variant) {
      state.variant = variant;
      showVariant();
    }
    state.selected = -1;
    state.deep = false;
    load();
  }

  function go(k) {
    k = Math.max(0, Math.min(state.tokens.length, k));
    if (k === state.k) return;
    if (state.follow && state.game && k < state.tokens.length) state.follow = false;
    state.k = k;
    state.selected = -1;
    state.deep = false;
    load();
  }

  function play(tokenPlayed) {
    state.selected = -1;
    if (humanToMove()) {
      showError("game-error", null);
      api("game/turn", { turn: tokenPlayed, ply: state.k }).catch((e) => showError("game-error", e));
      return;
    }
    state.follow = false;
    if (state.label && state.tokens[state.k] !== tokenPlayed) state.label = `${state.label}, then your line`;
    state.tokens = state.tokens.slice(0, state.k).concat([tokenPlayed]);
    state.k += 1;
    state.deep = false;
    load();
  }

  // The game's position, with a person to move: a turn clicked goes to the game (the server waits a moment for the
  // referee's ask, which the page may not have heard of yet).
  function humanToMove() {
    const g = state.game;
    return Boolean(state.follow && g && g.playing && g.humans[g.to_move] && state.k === g.tokens.length);
  }

  function request(seen) {
    const body = {
      tab,
      variant: state.variant,
      start: state.start,
      turns: state.tokens.slice(0, state.k),
      solve: $("show-solver").checked,
      deep: state.deep,
      seen,
    };
    if (state.find && state.opened) body.game = { start: state.opened.start, turns: state.opened.tokens };
    return body;
  }

  // Asks for the position shown, then for the solver's values while they come.
  async function load() {
    const generation = ++state.generation;
    if (controller) controller.abort();
    controller = new AbortController();
    const signal = controller.signal;
    state.solver = null;
    setReady(false); // the position drawn is the last one until the server's answer: clicks wait for it
    draw();
    let seen = "";
    for (;;) {
      let r;
      try {
        r = await api("position", request(seen), signal);
      } catch (e) {
        if (generation !== state.generation) return;
        if (e.name === "AbortError") return;
        $("solver-status").textContent = "";
        showError("position-error", e);
        if (seen) await new Promise((resolve) => setTimeout(resolve, 1000));
        if (!seen) return;
        continue;
      }
      if (generation !== state.generation) return;
      showError("position-error", null);
      state.info = r.position;
      state.solver = r.solver;
      setReady(true);
      if (r.game) showFind(r.game);
      draw();
      seen = r.seen;
      const working = r.solver && !r.solver.done && r.solver.deep;
      const finding = r.game && !r.game.done;
      if (!working && !finding) return;
    }
  }

  function setReady(ready) {
    // What a click acts on, and what tests wait for: the position of turn k of the line, as the server drew it.
    state.ready = ready;
    const node = $("board");
    if (ready) node.dataset.ply = String(state.k);
    else delete node.dataset.ply;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Drawing

  function valuesFor(prefix) {
    // The best value among the turns whose token starts with prefix (a square's placements).
    const values = state.solver ? state.solver.values : {};
    let best = null;
    for (const t of state.info.legal) {
      if (!t.startsWith(prefix)) continue;
      const v = values[t];
      if (v && (best === null || v[2] > best[2])) best = v;
    }
    return best;
  }

  function lastSquare() {
    // The square of the last placement of the line (the viewer's "last" mark).
    for (let i = state.k - 1; i >= 0; i--) {
      const m = /^([a-d][1-4])/.exec(state.tokens[i]);
      if (m) return "abcd".indexOf(m[1][0]) + 4 * (Number(m[1][1]) - 1);
      if (i === state.k - 1) continue;
      break;
    }
    return -1;
  }

  function draw() {
    const info = state.info;
    if (state.setup) return drawSetup();
    if (!info) return;
    board.render(info.board, info.lines, lastSquare());
    const show = $("show-solver").checked && state.solver;
    const over = info.outcome !== "ongoing";
    for (let s = 0; s < 16; s++) {
      const slot = board.slots[s];
      slot.classList.remove("v-win", "v-draw", "v-loss", "selected", "target");
      labels[s].textContent = "";
      if (info.board[s] >= 0 || over || info.hand < 0) continue;
      slot.classList.add("target");
      if (s === state.selected) slot.classList.add("selected");
      const v = show ? valuesFor(squareName(s)) : null;
      if (v) {
        slot.classList.add(`v-${v[0]}`);
        labels[s].textContent = shortValue(v);
      }
    }
    drawHand();
    drawPieces();
    drawCalls();
    drawSolver();
    drawLabel();
    $("position-text").textContent = info.position + (info.claimable ? " (the last placement's alignment may be claimed)" : "");
  }

  function drawHand() {
    const info = state.info;
    const box = clear($("hand"));
    if (info.hand >= 0) {
      box.append(QA.pieceIcon(info.hand), el("span", null, `${HEX[info.hand]}: ${QA.pieceDescription(info.hand)}, to place`));
    } else {
      box.append(el("span", "note", info.outcome === "ongoing" ? "none: the player to move gives a piece" : "none"));
    }
  }

  function drawPieces() {
    const info = state.info;
    const box = clear($("pieces"));
    const used = new Set(info.board.filter((p) => p >= 0));
    if (info.hand >= 0) used.add(info.hand);
    const over = info.outcome !== "ongoing";
    const prefix = over ? null : info.hand < 0 ? "" : state.selected >= 0 ? squareName(state.selected) : null;
    const values = $("show-solver").checked && state.solver ? state.solver.values : {};
    const placing = over ? "" : "(choose a square first)";
    $("give-note").textContent = prefix === null ? placing : prefix ? `(to give after ${prefix})` : "(click one to give it)";
    for (let p = 0; p < 16; p++) {
      if (used.has(p)) continue;
      const t = prefix === null ? null : prefix + HEX[p];
      const legal = t !== null && info.legal.includes(t);
      const b = el("button", `piece-button${legal ? " legal" : ""}`, QA.pieceIcon(p));
      b.type = "button";
      b.dataset.piece = HEX[p];
      b.title = `${HEX[p]}: ${QA.pieceDescription(p)}`;
      const v = legal ? values[t] : null;
      if (v) {
        b.classList.add(`v-${v[0]}`);
        b.append(el("span", "value-tag", shortValue(v)));
        b.title += ` — ${valueText(v)}`;
      }
      b.disabled = !legal || !state.ready;
      b.addEventListener("click", () => play(t));
      box.append(b);
    }
    if (!box.firstChild) box.append(el("span", "note", "none"));
  }

  function drawCalls() {
    const info = state.info;
    const box = clear($("calls"));
    if (info.legal.includes("!")) {
      box.append(button("Claim QUARTO! (the alignment the last turn missed)", "token !", () => play("!")));
    }
    if (state.selected >= 0) {
      const call = `${squareName(state.selected)}!`;
      if (info.legal.includes(call)) box.append(button(`Call QUARTO! on ${squareName(state.selected)}`, `token ${call}`, () => play(call)));
      box.append(button("Cancel the placement (Esc)", null, () => { state.selected = -1; draw(); }));
    }
  }

  function drawSolver() {
    const info = state.info;
    const status = $("solver-status");
    const list = clear($("solver-list"));
    const bar = $("solver-bar");
    const deeper = $("solve-deeper");
    deeper.hidden = true;
    status.classList.remove("thinking");
    if (!$("show-solver").checked) {
      status.textContent = "Values hidden.";
      bar.style.width = "0";
      return;
    }
    if (info.outcome !== "ongoing") {
      status.textContent = info.outcome === "draw" ? "The game is over: a draw (the board is full)." : "The game is over: the last turn won it.";
      bar.style.width = "0";
      return;
    }
    const s = state.solver;
    if (!s) {
      status.textContent = "Asking the solver…";
      status.classList.add("thinking");
      return;
    }
    bar.style.width = `${s.total ? (100 * s.valued) / s.total : 0}%`;
    if (!s.deep) {
      status.textContent = `${s.empty} empty squares: the solver starts by itself from ${12} down.`;
      deeper.hidden = false;
    } else if (!s.done) {
      status.textContent = `The solver is thinking… ${s.valued} of ${s.total} turns valued (${s.seconds.toFixed(1)} s)`;
      status.classList.add("thinking");
    } else {
      let best = null;
      for (const v of Object.values(s.values)) if (best === null || v[2] > best[2]) best = v;
      status.textContent = `Solved: ${valueText(best)} for the player to move; ${s.total} turns (${s.seconds.toFixed(2)} s).`;
    }
    const rows = Object.entries(s.values).sort((a, b) => b[1][2] - a[1][2] || a[0].localeCompare(b[0]));
    for (const [t, v] of rows) {
      const b = button(`${t}`, `play ${t}`, () => play(t));
      list.append(el("li", `v-${v[0]}`, b, el("span", null, ` ${valueText(v)}`)));
    }
  }

  function drawLabel() {
    const n = state.tokens.length;
    const k = state.k;
    const who = k % 2 === 0 ? "first player" : "second player";
    let text = k ? `turn ${k} of ${n}: ${state.tokens[k - 1]}` : `start (turn 0 of ${n})`;
    if (state.info.outcome === "ongoing") text += ` · ${who} to move`;
    $("line-label").textContent = text;
    const g = state.game;
    let title = state.label || "Your line";
    if (state.follow && g) title = `Game ${g.id}: ${g.players[0]} vs ${g.players[1]}`;
    if (humanToMove()) title += " — your turn";
    $("board-title").textContent = title;
  }

  function showVariant() {
    const [shapes, attributes, claims] = state.variant.split(" ");
    $("v-shapes").value = shapes;
    $("v-claims").value = claims;
    const on = new Set(attributes.split(","));
    for (const box of document.querySelectorAll("#variant-form input[type=checkbox]")) box.checked = on.has(box.value);
  }

  function readVariant() {
    const attributes = [...document.querySelectorAll("#variant-form input[type=checkbox]:checked")].map((b) => b.value);
    return `${$("v-shapes").value} ${attributes.join(",") || "color"} ${$("v-claims").value}`;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Clicks and keys

  board.svg.addEventListener("click", (e) => {
    const node = e.target.closest("[data-square]");
    if (!node) return;
    const name = node.getAttribute("data-square");
    const s = "abcd".indexOf(name[0]) + 4 * (Number(name[1]) - 1);
    if (state.setup) return setupClick(s);
    const info = state.info;
    if (!state.ready || !info || info.outcome !== "ongoing" || info.hand < 0 || info.board[s] >= 0) return;
    const mine = info.legal.filter((t) => t.startsWith(name));
    if (mine.includes(name)) return play(name); // a placement that ends the game (it wins, or fills the board)
    state.selected = state.selected === s ? -1 : s;
    draw();
  });

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    const moves = { ArrowLeft: state.k - 1, ArrowRight: state.k + 1, Home: 0, End: state.tokens.length };
    if (e.key === "Escape") {
      state.selected = -1;
      draw();
      return;
    }
    if (!(e.key in moves)) return;
    e.preventDefault();
    go(moves[e.key]);
  });

  $("to-start").addEventListener("click", () => go(0));
  $("back").addEventListener("click", () => go(state.k - 1));
  $("forward").addEventListener("click", () => go(state.k + 1));
  $("to-end").addEventListener("click", () => go(state.tokens.length));
  $("show-solver").addEventListener("change", () => load());
  $("solve-deeper").addEventListener("click", () => {
    state.deep = true;
    load();
  });

  $("position-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("position-input").value.trim() || STARTPOS;
    state.follow = false;
    // Checked by the server: a typo comes back as one line under the field, and the line shown stays.
    api("position", { tab, variant: state.variant, start: text, turns: [], solve: false }).then(() => {
      showError("position-error", null);
      $("position-input").value = "";
      setLine(text, [], 0);
    }).catch((err) => showError("position-error", err));
  });

  $("variant-form").addEventListener("change", () => {
    state.follow = false;
    state.variant = readVariant();
    setLine(state.start, state.tokens.slice(0, state.k), state.k, null, state.label);
  });

  // ---------------------------------------------------------------------------------------------------------------
  // Setting up a position by hand

  function positionString(cells, hand) {
    const rows = [];
    for (let r = 3; r >= 0; r--) {
      let row = "";
      for (let c = 0; c < 4; c++) {
        const p = cells[4 * r + c];
        row += p >= 0 ? HEX[p] : ".";
      }
      rows.push(row);
    }
    return `${rows.join("/")} ${hand >= 0 ? HEX[hand] : "-"}`;
  }

  function drawSetup() {
    const su = state.setup;
    board.render(su.board, [], -1);
    for (let s = 0; s < 16; s++) {
      board.slots[s].classList.remove("v-win", "v-draw", "v-loss", "selected");
      board.slots[s].classList.add("target");
      labels[s].textContent = "";
    }
    const used = new Set(su.board.filter((p) => p >= 0));
    const box = clear($("setup-pieces"));
    for (let p = 0; p < 16; p++) {
      const b = el("button", `piece-button${p === su.piece ? " chosen" : ""}`, QA.pieceIcon(p));
      b.type = "button";
      b.dataset.piece = HEX[p];
      b.disabled = used.has(p);
      b.addEventListener("click", () => { su.piece = p; drawSetup(); });
      box.append(b);
    }
    const hand = clear($("setup-hand"));
    const none = el("option", null, "none (the player to move gives)");
    none.value = "-1";
    hand.append(none);
    for (let p = 0; p < 16; p++) {
      if (used.has(p)) continue;
      const o = el("option", null, `${HEX[p]}: ${QA.pieceDescription(p)}`);
      o.value = String(p);
      hand.append(o);
    }
    hand.value = String(used.has(su.hand) ? -1 : su.hand);
    su.hand = Number(hand.value);
    $("position-input").value = positionString(su.board, su.hand);
  }

  function setupClick(s) {
    const su = state.setup;
    if (su.board[s] >= 0) su.board[s] = -1;
    else if (su.piece >= 0 && !su.board.includes(su.piece)) {
      su.board[s] = su.piece;
      su.piece = -1;
    }
    drawSetup();
  }

  $("setup-toggle").addEventListener("click", () => {
    const info = state.info;
    state.setup = state.setup ? null : { board: info ? info.board.slice() : new Array(16).fill(-1), hand: info ? info.hand : -1, piece: -1 };
    $("setup").hidden = !state.setup;
    if (state.setup) drawSetup();
    else load();
  });
  $("setup-hand").addEventListener("change", () => {
    state.setup.hand = Number($("setup-hand").value);
    drawSetup();
  });
  $("setup-clear").addEventListener("click", () => {
    state.setup.board = new Array(16).fill(-1);
    state.setup.hand = -1;
    drawSetup();
  });
  $("setup-done").addEventListener("click", () => {
    const text = positionString(state.setup.board, state.setup.hand);
    api("position", { tab, variant: state.variant, start: text, turns: [], solve: false }).then(() => {
      state.setup = null;
      $("setup").hidden = true;
      $("position-input").value = "";
      showError("position-error", null);
      state.follow = false;
      setLine(text, [], 0);
    }).catch((err) => showError("position-error", err));
  });

  // ---------------------------------------------------------------------------------------------------------------
  // Engines

  $("ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const engine = $("ask-engine").value;
    if (!engine) return showError("ask-error", new Error("no engine is loaded: start the board with --engine NAME"));
    showError("ask-error", null);
    const asked = { start: state.start, turns: state.tokens.slice(0, state.k), variant: state.variant };
    const result = clear($("ask-result"));
    result.append(el("span", "thinking", `${engine} is thinking…`));
    $("ask-info").textContent = "";
    api("engine/go", { engine, limit: $("ask-limit").value, ...asked }).then((a) => {
      clear(result);
      $("ask-info").textContent = a.info.join("\n");
      if (a.error) {
        result.append(el("span", "field-error", a.error));
        return;
      }
      const same = asked.start === state.start && asked.turns.join(" ") === state.tokens.slice(0, state.k).join(" ");
      const v = same && state.solver ? state.solver.values[a.turn] : undefined;
      const solver = v ? `solver: ${valueText(v)}` : "solver: not valued yet";
      result.append(el("b", null, `${a.engine} plays ${a.turn}`), ` in ${a.ms} ms`, a.score ? ` · its score: ${a.score}` : "", ` · ${solver}`);
      if (same && state.info && state.info.legal.includes(a.turn)) result.append(" ", button("Play it", null, () => play(a.turn)));
    }).catch((err) => { clear(result); showError("ask-error", err); });
  });
  $("ask-stop").addEventListener("click", () => {
    const engine = $("ask-engine").value;
    if (engine) api("engine/stop", { engine }).catch((err) => showError("ask-error", err));
  });

  function showEngines(engines) {
    const names = engines.map((e) => e.name);
    if (names.join("\n") !== state.engines.map((e) => e.name).join("\n")) {
      const ask = $("ask-engine");
      const keep = ask.value;
      clear(ask);
      for (const n of names) {
        const o = el("option", null, n);
        o.value = n;
        ask.append(o);
      }
      if (names.includes(keep)) ask.value = keep;
      for (const id of ["game-mover", "game-other"]) {
        const select = $(id);
        const before = select.value;
        clear(select);
        for (const n of [HUMAN, ...names]) {
          const o = el("option", null, n === HUMAN ? "you (human)" : n);
          o.value = n;
          select.append(o);
        }
        select.value = before && [HUMAN, ...names].includes(before) ? before : id === "game-other" && names.length ? names[0] : HUMAN;
      }
    }
    state.engines = engines;
    for (const o of $("ask-engine").options) {
      const e = engines.find((x) => x.name === o.value);
      o.textContent = e && e.state !== "idle" ? `${e.name} (${e.state})` : o.value;
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The board's game

  $("game-form").addEventListener("submit", (e) => {
    e.preventDefault();
    showError("game-error", null);
    const here = $("game-from-here").checked;
    const body = {
      variant: state.variant,
      start: here ? state.start : STARTPOS,
      turns: here ? state.tokens.slice(0, state.k) : [],
      tc: $("game-tc").value,
      human_clock: $("game-human-clock").checked,
      mover: $("game-mover").value,
      other: $("game-other").value,
    };
    const following = state.follow;
    state.follow = true; // the new game's first state may come before this answer
    api("game/new", body).then(() => followGame(true)).catch((err) => {
      state.follow = following;
      showError("game-error", err);
    });
  });
  $("game-abandon").addEventListener("click", () => {
    api("game/abandon", {}).catch((err) => showError("game-error", err));
  });
  $("game-follow").addEventListener("click", () => {
    state.follow = true;
    followGame(true);
  });

  function followGame(force) {
    const g = state.game;
    if (!state.follow || !g) return;
    const same = state.start === g.start && state.tokens.join(" ") === g.tokens.join(" ") && state.variant === g.variant;
    if (same && !force && state.k === g.tokens.length) {
      draw();
      return;
    }
    const atEnd = state.k === state.tokens.length;
    if (!same || atEnd || force) setLine(g.start, g.tokens, g.tokens.length, g.variant);
  }

  function seconds(ms) {
    return ms === null || ms === undefined ? "" : `${(ms / 1000).toFixed(1)} s`;
  }

  let gameSeen = 0;
  function showGame(g) {
    state.game = g;
    gameSeen = performance.now();
    const status = $("game-status");
    if (!g) {
      status.textContent = "No game yet: choose the sides and press Start.";
      clear($("game-clocks"));
      return;
    }
    $("game-saved").textContent = g.saved || "";
    followGame(false);
    drawGame();
  }

  function drawGame() {
    const g = state.game;
    if (!g) return;
    const status = $("game-status");
    const thinking = g.thinking_ms + (performance.now() - gameSeen);
    if (g.playing) {
      const mover = g.players[g.to_move];
      status.textContent = g.asked ? `Game ${g.id}: your turn (${g.to_move ? "second" : "first"} player) · ${seconds(thinking)}`
        : `Game ${g.id}: ${mover} to move, thinking ${seconds(thinking)}`;
    } else {
      const detail = g.detail ? `: ${g.detail}` : "";
      status.textContent = `Game ${g.id} is over. Result ${g.result} (${g.termination})${detail}`;
    }
    const clocks = clear($("game-clocks"));
    clocks.append(el("span"), el("b", null, "player"), el("b", null, "clock"));
    g.players.forEach((name, side) => {
      const c = g.clocks[side] || {};
      let left = c.remaining_ms === null || c.remaining_ms === undefined ? null : c.remaining_ms;
      if (left !== null && g.playing && g.to_move === side) left = Math.max(0, left - thinking);
      const text = left !== null ? seconds(left) : c.movetime_ms ? `${seconds(c.movetime_ms)} a turn` : "untimed";
      clocks.append(el("span", g.playing && g.to_move === side ? "to-move" : null, side ? "second" : "first"),
        el("span", null, name === HUMAN ? "you (human)" : name), el("span", null, text));
    });
  }
  setInterval(() => { if (state.game && state.game.playing) drawGame(); }, 200);

  // ---------------------------------------------------------------------------------------------------------------
  // Games opened from files and links

  $("load-form").addEventListener("submit", (e) => {
    e.preventDefault();
    showError("load-error", null);
    api("games/load", { path: $("load-path").value }).catch((err) => showError("load-error", err));
  });

  function showGames(data) {
    $("games-source").textContent = data.source ? `${data.games.length} games from ${data.source}` : "No file opened.";
    const notes = clear($("games-notes"));
    for (const n of data.notes) notes.append(el("li", "field-error", n));
    const list = clear($("games-list"));
    data.games.forEach((g, i) => {
      const o = el("option", null, `${g.label} (${g.turns} turns)`);
      o.value = String(i);
      list.append(o);
    });
    // A newly opened file shows its first game; the list sent again (another page opened it, a reconnect) does not
    // take the board from what it shows.
    if (data.games.length && data.source !== gamesSource && (gamesSource !== null || !linked)) openGame(0);
    gamesSource = data.source;
  }
  let gamesSource = null;

  function openGame(index) {
    $("games-list").value = String(index);
    api("games/open", { index }).then(showOpened).catch((err) => showError("load-error", err));
  }

  function showOpened(game, k) {
    state.opened = game;
    state.find = null;
    $("game-view").hidden = false;
    $("game-title").textContent = `${game.label}: ${game.reason || game.result}`;
    $("game-detail").textContent = game.error ? `This game cannot be shown whole: ${game.error}` : "";
    $("find-status").textContent = "";
    const turns = clear($("game-turns"));
    game.plies.forEach((ply, i) => {
      const b = button(QA.plyToken(ply), `turn ${i + 1}`, () => {
        state.follow = false;
        setLine(game.start, game.tokens, i + 1, game.variant, game.label);
      });
      b.dataset.ply = String(i);
      turns.append(el("li", null, b));
    });
    state.follow = false;
    setLine(game.start, game.tokens, k === undefined ? 0 : k, game.variant, game.label);
  }

  function showFind(result) {
    state.find = result;
    const buttons = document.querySelectorAll("#game-turns button");
    result.marks.forEach((m, i) => {
      const b = buttons[i];
      if (!b) return;
      b.classList.toggle("mistake", Boolean(m && m.mistake));
      if (m) b.title = `turn ${i + 1}: ${valueText(m.before)} before, ${valueText(m.after)} after${m.mistake ? ` — ${m.mistake}` : ""}`;
    });
    const status = $("find-status");
    const valued = result.marks.filter((m) => m).length;
    if (!result.done) {
      status.textContent = `The solver is going through the game… ${valued} turns valued`;
      status.classList.add("thinking");
      return;
    }
    status.classList.remove("thinking");
    if (result.first === null) {
      status.textContent = "No turn changed the result (the solver looks from 12 empty squares down).";
    } else {
      const m = result.marks[result.first];
      status.textContent = `Turn ${result.first + 1} (${state.opened.tokens[result.first]}): ${m.mistake}: ${valueText(m.before)} before, ${valueText(m.after)} after; best: ${m.best.join(" ")}`;
    }
    if (state.findJump && result.first !== null) {
      state.findJump = false;
      go(result.first);
    }
    if (result.done) state.find = null;
  }

  $("find-change").addEventListener("click", () => {
    if (!state.opened) return;
    state.find = { marks: [], first: null, done: false };
    state.findJump = true;
    $("find-status").textContent = "The solver is going through the game…";
    load();
  });
  $("games-list").addEventListener("change", () => {
    openGame(Number($("games-list").value));
    $("games-list").blur();
  });
  const stepGame = (d) => {
    const list = $("games-list");
    const i = Number(list.value) + d;
    if (list.options.length && i >= 0 && i < list.options.length) openGame(i);
  };
  $("games-prev").addEventListener("click", () => stepGame(-1));
  $("games-next").addEventListener("click", () => stepGame(1));

  function fromLink() {
    // "Open on the board" from another page (static/board-link.js): the game's turns in the query.
    const q = new URLSearchParams(location.search);
    if (!q.has("turns") && !q.has("start")) return false;
    const body = {};
    for (const key of ["variant", "start", "turns", "white", "black", "result", "reason"]) if (q.has(key)) body[key] = q.get(key);
    const k = Number(q.get("k") || 0);
    api("games/link", body).then((game) => showOpened(game, k)).catch((err) => showError("load-error", err));
    return true;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The feeds

  function follow() {
    const status = $("status");
    const source = new EventSource("/events");
    source.addEventListener("state", (e) => {
      const s = JSON.parse(e.data);
      status.textContent = `${s.engines.length} engine${s.engines.length === 1 ? "" : "s"} loaded`;
      showEngines(s.engines);
      showGame(s.game);
    });
    source.addEventListener("games", (e) => showGames(JSON.parse(e.data)));
    source.addEventListener("end", () => {
      source.close();
      status.textContent = "The board has stopped: this page no longer works (start the board again, then reload).";
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) status.textContent = "disconnected";
    };
  }

  showVariant();
  const linked = fromLink();
  if (!linked) setLine(STARTPOS, [], 0);
  follow();
})();
