/* quarto-arena: the board and its pieces, the game viewer, the charts, and the two pages that use them (the live
 * page, fed by Server-Sent Events, and report.html, which carries its data inside).
 *
 * Every string that comes from the data (engine names, details, scores) goes into the page as text
 * (textContent, text nodes), never as markup: an engine named "<script>" is shown, not run.
 *
 * The ladder's pages (arena/ladder/render.py writes them whole) add the same viewer, boards and charts: bootLadder,
 * bootBot, bootGame.
 *
 * A game is the compact encoding of arena/web/model.py: a start (board, hand) and plies [place, give, mark, ms,
 * score]. Replaying it is bookkeeping only (the hand piece goes to its square, the given piece into the hand);
 * the rules were checked in Python when the data was made. */
(function () {
  "use strict";

  const SVG_NS = "http://www.w3.org/2000/svg";
  const HEX = "0123456789abcdef";
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22"];
  const PERCENT = new Set(["score", "draw_rate", "los_next"]);
  const ONE_DECIMAL = new Set(["rating", "margin"]);

  // ---------------------------------------------------------------------------------------------------------------
  // DOM helpers: text only

  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
    }
    return node;
  }

  function svgEl(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function squareName(s) {
    return "abcd"[s % 4] + String(Math.floor(s / 4) + 1);
  }

  function pieceDescription(p) {
    return [p & 8 ? "dark" : "light", p & 4 ? "square" : "round", p & 2 ? "tall" : "short",
      p & 1 ? "hollow" : "solid"].join(" ");
  }

  function plyToken(ply) {
    const [place, give, mark] = ply;
    if (mark === 2) return "!";
    let token = place >= 0 ? squareName(place) : "";
    if (mark === 1) token += "!";
    if (give >= 0) token += HEX[give];
    return token;
  }

  function seconds(ms) {
    return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  }

  function duration(s) {
    s = Math.max(0, Math.round(s));
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    return `${h}:${String(m).padStart(2, "0")}:${String(r).padStart(2, "0")}`;
  }

  function heatColour(score) {
    // The same as report.py's heat_colour: red for 0, pale for 1/2, green for 1.
    return `hsl(${Math.round(120 * score)}, 65%, ${Math.round(92 - 30 * Math.abs(score - 0.5))}%)`;
  }

  function cellText(header, v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "boolean") return v ? "yes" : "";
    if (typeof v === "number" && !Number.isInteger(v)) {
      if (PERCENT.has(header)) return (100 * v).toFixed(1) + "%";
      if (ONE_DECIMAL.has(header)) return v.toFixed(1);
      return String(Number(v.toPrecision(6)));
    }
    if (typeof v === "number" && PERCENT.has(header)) return (100 * v).toFixed(1) + "%";
    if (typeof v === "number" && ONE_DECIMAL.has(header)) return v.toFixed(1);
    return String(v);
  }

  function table(data, className) {
    const head = el("tr", null, ...data.headers.map((h) => el("th", null, h.replace(/_/g, " "))));
    const body = data.rows.map((row) => el("tr", null, ...row.map((v, i) => el("td", typeof v === "number" ? "n" : null, cellText(data.headers[i], v)))));
    return el("table", className, el("thead", null, head), el("tbody", null, ...body));
  }

  function crosstable(cross) {
    if (!cross.names.length) return el("p", null, "No game has been scored yet.");
    const head = el("tr", null, el("th", null, "player"), ...cross.names.map((n, i) => {
      const th = el("th", null, String(i + 1));
      th.title = n;
      return th;
    }));
    const rows = cross.names.map((name, i) => el("tr", null, el("th", null, `${i + 1}. ${name}`),
      ...cross.cells[i].map((cell) => {
        if (!cell) return el("td", "none");
        const [points, games] = cell;
        const td = el("td", null, `${points}/${games}`);
        td.style.background = heatColour(games ? points / games : 0.5);
        return td;
      })));
    return el("table", "cross", el("thead", null, head), el("tbody", null, ...rows));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Pieces: side views of the real pieces. Round pieces are cylinders, square ones boxes; tall ones stand higher;
  // dark ones are dark wood; hollow ones have a hole in the top. Drawn in a 100 x 100 box.

  function pieceShape(p) {
    const dark = p & 8, square = p & 4, tall = p & 2, hollow = p & 1;
    const g = svgEl("g", { class: `piece ${dark ? "dark" : "light"}`, "data-piece": HEX[p] });
    g.append(svgEl("title", {}, document.createTextNode(`${HEX[p]}: ${pieceDescription(p)}`)));
    const h = tall ? 58 : 30;
    const base = 88;
    const top = base - h;
    if (square) {
      const x0 = 20, x1 = 66, d = 16; // front face, then the top and right faces in oblique projection
      g.append(svgEl("path", { class: "body", d: `M${x0} ${base}V${top}H${x1}V${base}Z` }));
      g.append(svgEl("path", { class: "body", d: `M${x1} ${base}V${top}L${x1 + d} ${top - d}V${base - d}Z` }));
      g.append(svgEl("path", { class: "body top", d: `M${x0} ${top}L${x0 + d} ${top - d}H${x1 + d}L${x1} ${top}Z` }));
      if (hollow) {
        const cx = (x0 + x1 + d) / 2, cy = top - d / 2;
        g.append(svgEl("path", { class: "hole", d: `M${cx - 14} ${cy + 4}L${cx - 6} ${cy - 4}H${cx + 14}L${cx + 6} ${cy + 4}Z` }));
      }
    } else {
      const cx = 50, rx = 26, ry = 9;
      g.append(svgEl("path", {
        class: "body",
        d: `M${cx - rx} ${top}V${base}A${rx} ${ry} 0 0 0 ${cx + rx} ${base}V${top}Z`,
      }));
      g.append(svgEl("ellipse", { class: "body top", cx, cy: top, rx, ry }));
      if (hollow) g.append(svgEl("ellipse", { class: "hole", cx, cy: top, rx: 12, ry: 4.5 }));
    }
    return g;
  }

  function pieceIcon(p) {
    const svg = svgEl("svg", { viewBox: "0 0 100 100", role: "img", "aria-label": pieceDescription(p) }, pieceShape(p));
    svg.classList.add("piece-icon");
    return svg;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The board: row 4 at the top, column a on the left, as `quarto-arena show` draws it.

  class Board {
    constructor(container) {
      this.svg = svgEl("svg", { class: "board", viewBox: "0 0 440 440", role: "img", "aria-label": "Quarto board" });
      this.svg.append(svgEl("rect", { class: "frame", x: 22, y: 4, width: 414, height: 414, rx: 18 }));
      this.slots = [];
      this.cells = [];
      for (let s = 0; s < 16; s++) {
        const col = s % 4, row = Math.floor(s / 4);
        const x = 30 + col * 100, y = 12 + (3 - row) * 100;
        const slot = svgEl("circle", { class: "slot", cx: x + 50, cy: y + 50, r: 44, "data-square": squareName(s) });
        const cell = svgEl("g", { transform: `translate(${x} ${y})`, "data-square": squareName(s) });
        this.svg.append(slot, cell);
        this.slots.push(slot);
        this.cells.push(cell);
      }
      for (let i = 0; i < 4; i++) {
        this.svg.append(svgEl("text", { class: "coord", x: 80 + i * 100, y: 432 }, document.createTextNode("abcd"[i])));
        this.svg.append(svgEl("text", { class: "coord", x: 11, y: 62 + (3 - i) * 100 }, document.createTextNode(String(i + 1))));
      }
      this.svg.setAttribute("viewBox", "0 0 440 444");
      container.append(this.svg);
    }

    render(board, lines, last) {
      const lit = (lines || []).reduce((a, m) => a | m, 0);
      for (let s = 0; s < 16; s++) {
        const slot = this.slots[s];
        slot.classList.toggle("line", Boolean(lit >> s & 1));
        slot.classList.toggle("last", s === last && !(lit >> s & 1));
        clear(this.cells[s]);
        if (board[s] >= 0) this.cells[s].append(pieceShape(board[s]));
      }
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // A game, replayed into one state per turn boundary

  function states(game) {
    const out = [];
    let board = game.board.slice(), hand = game.hand;
    const used = [0, 0];
    out.push({ board: board.slice(), hand, last: -1, used: used.slice(), given: -1 });
    game.plies.forEach((ply, i) => {
      const [place, give, , ms] = ply;
      if (place >= 0) {
        board[place] = hand;
        hand = -1;
      }
      if (give >= 0) hand = give;
      used[i % 2] += ms;
      out.push({ board: board.slice(), hand, last: place, used: used.slice(), given: give });
    });
    return out;
  }

  function piecesLeft(state) {
    const gone = new Set(state.board.filter((p) => p >= 0));
    if (state.hand >= 0) gone.add(state.hand);
    const left = [];
    for (let p = 0; p < 16; p++) if (!gone.has(p)) left.push(p);
    return left;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The viewer: pick a game, step through it with the buttons or the arrow keys

  class Viewer {
    constructor(root, names, options) {
      this.root = clear(root);
      this.names = names;
      this.game = null;
      this.k = 0;
      this.options = options || {};
      this.picker = el("div", "picker");
      this.root.append(this.picker);
      const left = el("div", "left-col");
      const right = el("div", "right-col");
      this.root.append(left, right);
      this.title = el("div", "status");
      left.append(this.title);
      this.board = new Board(left);
      this.controls = el("div", "controls");
      const button = (label, title, action) => {
        const b = el("button", null, label);
        b.type = "button";
        b.title = title;
        b.addEventListener("click", action);
        this.controls.append(b);
        return b;
      };
      button("« start", "the start position (Home)", () => this.go(0));
      button("‹ back", "the previous turn (←)", () => this.go(this.k - 1));
      button("next ›", "the next turn (→)", () => this.go(this.k + 1));
      button("end »", "the end of the game (End)", () => this.go(Infinity));
      this.turnLabel = el("span", "turn-label");
      this.controls.append(this.turnLabel);
      left.append(this.controls, el("p", "legend", "Keys: ← → step, Home/End jump. Pieces: light or dark wood, round or square, short or tall, solid or hollow top."));
      this.status = el("div", "status");
      this.players = el("div", "players");
      this.handBox = el("div", "hand");
      this.value = el("div", "value");
      this.turnList = el("ol", "turns");
      this.leftBox = el("div", "left");
      this.detail = el("p", "note detail");
      right.append(this.status, this.players, el("h3", null, "Piece handed over"), this.handBox, this.value,
        el("h3", null, "Turns"), this.turnList, el("h3", null, "Pieces left"), this.leftBox, this.detail);
      if (this.options.keyboard !== false) document.addEventListener("keydown", (e) => this.key(e));
      this.empty(this.options.emptyText || "No game to show yet.");
    }

    empty(text) {
      this.game = null;
      this.board.render(new Array(16).fill(-1), [], -1);
      this.title.textContent = text;
      for (const node of [this.status, this.players, this.handBox, this.value, this.turnList, this.leftBox, this.detail]) clear(node);
      this.turnLabel.textContent = "";
    }

    name(game, side) {
      const i = game.players[side];
      return i >= 0 && i < this.names.length ? this.names[i] : "?";
    }

    show(game, k) {
      this.game = game;
      this.states = states(game);
      this.title.textContent = `Game ${game.id} (round ${game.round}): ${this.name(game, 0)} vs ${this.name(game, 1)}`;
      clear(this.turnList);
      this.turnButtons = game.plies.map((ply, i) => {
        const b = el("button", i < game.opening ? "opening" : null, plyToken(ply));
        b.type = "button";
        b.title = `${i < game.opening ? "opening, " : ""}${ply[3]} ms${ply[4] ? `, score ${ply[4]}` : ""}`;
        const v = game.values && game.values[i];
        if (v && v.mistake) {
          b.classList.add("mistake");
          b.title = v.mistake;
        }
        b.addEventListener("click", () => this.go(i + 1));
        this.turnList.append(el("li", null, b));
        return b;
      });
      this.go(k === undefined ? this.states.length - 1 : k);
    }

    key(e) {
      if (!this.game || e.altKey || e.ctrlKey || e.metaKey) return;
      const t = e.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
      const moves = { ArrowLeft: this.k - 1, ArrowRight: this.k + 1, Home: 0, End: Infinity };
      if (!(e.key in moves)) return;
      e.preventDefault();
      this.go(moves[e.key]);
    }

    go(k) {
      const game = this.game;
      if (!game) return;
      const n = this.states.length - 1;
      k = Math.max(0, Math.min(n, k));
      this.k = k;
      const state = this.states[k];
      const over = k === n && game.result !== "*";
      this.board.render(state.board, over ? game.lines : [], state.last);
      this.turnButtons.forEach((b, i) => b.classList.toggle("current", i === k - 1));
      const ply = k > 0 ? game.plies[k - 1] : null;
      const mover = (k - 1) % 2;
      this.turnLabel.textContent = ply
        ? `turn ${k} of ${n}: ${plyToken(ply)} by ${this.name(game, mover)}${k <= game.opening ? " (opening)" : ""}`
        : `start (turn 0 of ${n})`;
      // Status line
      if (over) {
        this.status.textContent = `Result ${game.result}: ${game.reason}`;
      } else if (k === n && game.result === "*") {
        this.status.textContent = `In progress: ${this.name(game, k % 2)} to move`;
      } else {
        this.status.textContent = `${this.name(game, k % 2)} to move`;
      }
      // Players: time used and last reported score
      clear(this.players);
      this.players.append(el("span"), el("b", null, "time used"), el("b", null, "last score"));
      for (const side of [0, 1]) {
        let score = "";
        for (let i = k - 1; i >= 0; i--) {
          if (i % 2 === side) {
            score = game.plies[i][4] || "";
            break;
          }
        }
        const who = el("span", !over && k % 2 === side ? "to-move" : null, `${side === 0 ? "first" : "second"}: ${this.name(game, side)}`);
        this.players.append(who, el("span", null, seconds(state.used[side])), el("span", "score", score || "–"));
      }
      if (ply) {
        const tail = ply[4] ? `, reported score ${ply[4]}` : "";
        this.players.append(el("span", "note", `turn ${k}: ${seconds(ply[3])}${tail}`));
      }
      // The piece handed over
      clear(this.handBox);
      if (state.hand >= 0) {
        const giver = k > 0 && state.given >= 0 ? this.name(game, mover) : "the start position";
        this.handBox.append(pieceIcon(state.hand),
          el("span", null, `${HEX[state.hand]}: ${pieceDescription(state.hand)}, from ${giver}, for ${this.name(game, k % 2)} to place`));
      } else {
        this.handBox.append(el("span", "note", over || k === n ? "none" : `none: ${this.name(game, k % 2)} gives a piece`));
      }
      // Analysis: the value for the player to move, and where it changed hands
      clear(this.value);
      const values = game.values;
      if (values) {
        const now = values[k];
        const prev = k > 0 ? values[k - 1] : null;
        if (prev && prev.mistake) {
          this.value.classList.add("changed");
          this.value.append(el("div", null, `The value changed hands here: ${this.name(game, mover)} played ${plyToken(ply)}, ${prev.mistake} (${prev.before} before, ${prev.after} after; best: ${prev.best.join(" ")})`));
        } else {
          this.value.classList.remove("changed");
        }
        if (now && now.before) this.value.append(el("div", null, `Exact value for ${this.name(game, k % 2)} to move: ${now.before}`));
      }
      // Pieces left
      clear(this.leftBox);
      for (const p of piecesLeft(state)) this.leftBox.append(pieceIcon(p));
      if (!this.leftBox.firstChild) this.leftBox.append(el("span", "note", "none"));
      this.detail.textContent = [game.detail, game.error, `time control ${game.tc}`].filter(Boolean).join(" · ");
      if (this.options.onStep) this.options.onStep(game, k);
      // For static/board-link.js ("open on the board"): which game the viewer shows, at which turn.
      this.root.dispatchEvent(new CustomEvent("quarto-viewer-step", { bubbles: true, detail: { viewer: this, game, k } }));
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Charts (Chart.js)

  function colour(i, alpha) {
    const hex = PALETTE[i % PALETTE.length];
    if (alpha === undefined) return hex;
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
  }

  function ratingDatasets(history) {
    const sets = [];
    history.series.forEach((s, i) => {
      const pts = (f) => history.games.map((g, j) => ({ x: g, y: s.rating[j] === null ? null : f(s.rating[j], s.margin[j]) }));
      sets.push({ label: `${s.name} +95%`, band: true, data: pts((r, m) => r + m), borderWidth: 0, pointRadius: 0, fill: false, backgroundColor: colour(i, 0.15) });
      sets.push({ label: `${s.name} -95%`, band: true, data: pts((r, m) => r - m), borderWidth: 0, pointRadius: 0, fill: "-1", backgroundColor: colour(i, 0.15) });
      sets.push({ label: s.name, data: pts((r) => r), borderColor: colour(i), backgroundColor: colour(i), pointRadius: 0, borderWidth: 2 });
    });
    return sets;
  }

  const charts = {};

  function chart(id, config) {
    const canvas = document.getElementById(id);
    if (!canvas || typeof Chart === "undefined") return null;
    if (charts[id]) {
      charts[id].data = config.data;
      if (config.options) charts[id].options = config.options;
      charts[id].update("none");
      return charts[id];
    }
    charts[id] = new Chart(canvas, config);
    return charts[id];
  }

  function ratingChart(history) {
    return chart("rating-chart", {
      type: "line",
      data: { datasets: ratingDatasets(history) },
      options: {
        animation: false, maintainAspectRatio: false, spanGaps: true,
        scales: { x: { type: "linear", title: { display: true, text: "games" } }, y: { title: { display: true, text: "Elo (pool average 0)" } } },
        plugins: { legend: { labels: { filter: (item, data) => !data.datasets[item.datasetIndex].band } } },
      },
    });
  }

  function heatChart(cross) {
    const names = cross.names;
    const data = [];
    names.forEach((row, i) => names.forEach((col, j) => {
      const cell = cross.cells[i][j];
      if (cell) data.push({ x: col, y: row, v: cell[1] ? cell[0] / cell[1] : 0.5, points: cell[0], games: cell[1] });
    }));
    return chart("heat-chart", {
      type: "matrix",
      data: {
        datasets: [{
          label: "score", data,
          backgroundColor: (c) => (c.raw ? heatColour(c.raw.v) : "transparent"),
          borderColor: "#ffffff", borderWidth: 1,
          width: ({ chart: ch }) => ((ch.chartArea || {}).width || 0) / Math.max(1, names.length) - 2,
          height: ({ chart: ch }) => ((ch.chartArea || {}).height || 0) / Math.max(1, names.length) - 2,
        }],
      },
      options: {
        animation: false, maintainAspectRatio: false,
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { title: (items) => `${items[0].raw.y} against ${items[0].raw.x}`, label: (item) => `${item.raw.points}/${item.raw.games} points (${Math.round(100 * item.raw.v)}%)` } },
        },
        scales: {
          x: { type: "category", labels: names, offset: true, grid: { display: false }, title: { display: true, text: "opponent" } },
          y: { type: "category", labels: names.slice().reverse(), offset: true, grid: { display: false } },
        },
      },
    });
  }

  function endingChart(terminations) {
    const canvas = document.getElementById("ending-chart");
    if (canvas) canvas.parentElement.style.height = `${70 + 34 * terminations.length}px`;
    return chart("ending-chart", {
      type: "bar",
      data: { labels: terminations.map((t) => t[0]), datasets: [{ label: "games", data: terminations.map((t) => t[1]), backgroundColor: PALETTE[0] }] },
      options: { animation: false, maintainAspectRatio: false, indexAxis: "y", plugins: { legend: { display: false } } },
    });
  }

  function llrChart(sprt) {
    const xs = sprt.games;
    const flat = (v) => xs.map((g) => ({ x: g, y: v }));
    return chart("llr-chart", {
      type: "line",
      data: {
        datasets: [
          { label: "LLR", data: xs.map((g, i) => ({ x: g, y: sprt.llrs[i] })), borderColor: PALETTE[0], pointRadius: 0, borderWidth: 2 },
          { label: `upper bound ${sprt.upper.toFixed(2)} (H1)`, data: flat(sprt.upper), borderColor: PALETTE[2], borderDash: [6, 4], pointRadius: 0 },
          { label: `lower bound ${sprt.lower.toFixed(2)} (H0)`, data: flat(sprt.lower), borderColor: PALETTE[1], borderDash: [6, 4], pointRadius: 0 },
        ],
      },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: { type: "linear", title: { display: true, text: "games" } }, y: { suggestedMin: sprt.lower, suggestedMax: sprt.upper } },
      },
    });
  }

  // ---------------------------------------------------------------------------------------------------------------
  // report.html

  function bootReport() {
    const data = JSON.parse(document.getElementById("run-data").textContent);
    const s = data.summary;
    ratingChart(s.history);
    heatChart(s.crosstable);
    endingChart(s.terminations);
    if (s.sprt) llrChart(s.sprt);
    reportGames(data.games, s.names);
  }

  // The report's game viewer with its picker: every game of the run, the one in the page's #game-N first.
  function reportGames(games, names) {
    const root = document.getElementById("viewer");
    const viewer = new Viewer(root, names, { emptyText: "This run has no game yet." });
    if (!games.length) return;
    const byId = new Map(games.map((g, i) => [g.id, i]));
    const select = el("select");
    select.id = "game-select";
    select.setAttribute("aria-label", "game");
    games.forEach((g) => {
      const opt = el("option", null, `game ${g.id}: ${viewer.name(g, 0)} vs ${viewer.name(g, 1)}, ${g.result} ${g.reason}${g.values ? " (analysed)" : ""}`);
      opt.value = String(g.id);
      select.append(opt);
    });
    const pick = (id) => {
      const i = byId.get(id);
      if (i === undefined) return;
      select.value = String(id);
      viewer.show(games[i], 0);
    };
    select.addEventListener("change", () => {
      pick(Number(select.value));
      select.blur(); // the arrow keys step through the game picked, not through the list
    });
    const step = (d) => {
      const i = byId.get(Number(select.value)) + d;
      if (i >= 0 && i < games.length) pick(games[i].id);
    };
    const prev = el("button", null, "previous game");
    const next = el("button", null, "next game");
    prev.type = next.type = "button";
    prev.addEventListener("click", () => step(-1));
    next.addEventListener("click", () => step(1));
    viewer.picker.append(el("label", null, "Game "), select, prev, next);
    const fromHash = () => {
      const m = /^#game-(\d+)$/.exec(location.hash);
      if (m && byId.has(Number(m[1]))) {
        pick(Number(m[1]));
        root.scrollIntoView();
      }
    };
    window.addEventListener("hashchange", fromHash);
    pick(games[0].id);
    fromHash();
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The live page

  function liveBoard(game, names) {
    const card = el("div", "live");
    card.dataset.game = String(game.id);
    const name = (side) => names[game.players[side]] || "?";
    card.append(el("p", null, el("b", null, game.label || `game ${game.id}`), `: ${name(0)} vs ${name(1)}`));
    const board = new Board(card);
    const st = states(game);
    const last = st[st.length - 1];
    board.render(last.board, game.lines, last.last);
    const n = game.plies.length;
    const ply = n ? game.plies[n - 1] : null;
    card.append(el("p", "turn", ply ? `turn ${n}: ${plyToken(ply)} by ${name((n - 1) % 2)} (${seconds(ply[3])})` : "start"));
    if (last.hand >= 0) {
      const hand = el("p", "hand-line", `${name(n % 2)} places ${HEX[last.hand]} (${pieceDescription(last.hand)})`);
      card.append(hand);
    }
    return card;
  }

  // The live page's viewer, and how it opens a finished game (GET /api/game/ID) with the run's names.
  function liveViewer(status) {
    const viewer = new Viewer(document.getElementById("viewer"), [], { emptyText: "Pick one of the last finished games to replay it here." });
    const open = (id) => {
      fetch(`/api/game/${id}`).then((r) => (r.ok ? r.json() : Promise.reject(new Error(r.statusText)))).then((game) => {
        viewer.show(game, 0);
        document.getElementById("games").scrollIntoView();
      }).catch((e) => { status.textContent = `cannot load game ${id}: ${e.message}`; });
    };
    return { viewer, open };
  }

  // The live page's header from a summary: the progress bar, its line, the run's state.
  function showProgress(s, status) {
    const p = s.progress;
    const total = p.total === null ? "open-ended" : `${p.total}`;
    const pct = p.total ? (100 * p.done) / p.total : 0;
    document.getElementById("progress-bar").style.width = `${pct.toFixed(1)}%`;
    const running = p.running === null ? "games in flight: shown by the run's own --web" : `${p.running} running`;
    const parts = [`${p.done} of ${total} games${p.total ? ` (${pct.toFixed(0)}%)` : ""}`, running];
    if (p.rate) parts.push(`${p.rate.toFixed(2)} games/s`);
    if (p.eta_s !== null) parts.push(`ETA ${duration(p.eta_s)}`);
    if (p.elapsed_s !== null) parts.push(`elapsed ${duration(p.elapsed_s)}`);
    document.getElementById("progress-text").textContent = parts.join(" · ");
    status.textContent = `${p.state} · ${s.variant} · time control ${s.tc} · ${s.concurrency} at once`;
  }

  function bootLive() {
    const status = document.getElementById("status");
    const { viewer, open: openGame } = liveViewer(status);
    const onSummary = (s) => {
      viewer.names = s.names;
      showProgress(s, status);
      clear(document.getElementById("standings-table")).append(table(s.table, "standings"));
      clear(document.getElementById("engines-table")).append(table(s.engines, "small"));
      document.getElementById("match").textContent = s.match ? s.match.join("\n") : "";
      clear(document.getElementById("crosstable")).append(crosstable(s.crosstable));
      const forfeits = clear(document.getElementById("forfeits"));
      forfeits.append(s.forfeits.rows.length ? table(s.forfeits, "small") : el("p", "note", "No forfeits."));
      clear(document.getElementById("terminations")).append(el("h3", null, "How the games ended"), table({ headers: ["how it ended", "games"], rows: s.terminations }, "small"));
      ratingChart(s.history);
      const sprtSection = document.getElementById("sprt");
      if (s.sprt) {
        sprtSection.hidden = false;
        document.getElementById("sprt-line").textContent = `${s.sprt.line}  [${s.sprt.decision}]`;
        llrChart(s.sprt);
      }
      gameList(document.getElementById("recent"), s.recent, (g) => openGame(g.id));
      showNotices(s.notices);
    };
    follow(status, { summary: onSummary, boards: showBoards }, "the server has stopped");
  }

  // ---------------------------------------------------------------------------------------------------------------
  // What the live page and the ladder's page share: the last games, the notices, the boards, the event stream

  function gameList(node, games, open) {
    clear(node);
    for (const g of games) {
      const b = el("button", null, `game ${g.id}: ${g.first} vs ${g.second}, ${g.result} ${g.reason}`);
      b.type = "button";
      b.addEventListener("click", () => open(g));
      node.append(el("li", null, b));
    }
    if (!games.length) node.append(el("li", "note", "none yet"));
  }

  function showNotices(notices) {
    const node = clear(document.getElementById("notices"));
    for (const n of notices) node.append(el("li", null, n));
    if (!notices.length) node.append(el("li", "note", "none"));
  }

  function showBoards(b) {
    const box = clear(document.getElementById("boards"));
    for (const game of b.games) box.append(liveBoard(game, b.names));
    if (b.in_flight) {
      // Another process plays the run: this page reads its finished games and cannot see the ones being played.
      box.append(el("p", "empty", `Games in flight are ${b.in_flight} (quarto-arena tournament ... --web); this page follows the finished ones.`));
    } else if (!b.games.length) box.append(el("p", "empty", "No game is being played right now."));
  }

  // Follows /events: each of handlers (event name -> function of its JSON data); stopped is how the end is told.
  function follow(status, handlers, stopped) {
    const source = new EventSource("/events");
    for (const [name, on] of Object.entries(handlers)) source.addEventListener(name, (e) => on(JSON.parse(e.data)));
    source.addEventListener("end", () => {
      source.close();
      status.textContent += ` · ${stopped}: this page no longer updates`;
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) status.textContent = "disconnected";
    };
  }


  // ---------------------------------------------------------------------------------------------------------------
  // The ladder's pages (arena/ladder/render.py writes them whole; this adds the live updates, the chart, the viewer)

  function botLink(name) {
    const a = el("a", null, name);
    a.href = `/bot/${encodeURIComponent(name)}`;
    return a;
  }

  function ladderRating(rating, margin, provisional) {
    const td = el("td", "n", rating === null ? "" : `${rating.toFixed(1)} ± ${(margin || 0).toFixed(1)}`);
    if (rating !== null && provisional) {
      const mark = el("abbr", "provisional", "(provisional)");
      mark.title = "provisional: too few games or opponents yet";
      td.append(" ", mark);
    }
    return td;
  }

  function ladderForfeits(byReason) {
    const entries = Object.entries(byReason || {});
    const total = entries.reduce((n, [, k]) => n + k, 0);
    const td = el("td", "n", total ? String(total) : "");
    if (total) td.title = entries.map(([reason, k]) => `${k} ${reason}`).join(", ");
    return td;
  }

  // The same columns as render.py's LEADERBOARD_HEADERS.
  function leaderboard(lines) {
    const headers = ["rank", "bot", "version", "rating", "games", "score", "forfeits", "online", "slots", "playing", "last seen"];
    const head = el("tr", null, ...headers.map((h) => el("th", null, h)));
    const body = lines.map((r) => el("tr", null,
      el("td", "n", r.rank === null ? "" : String(r.rank)),
      el("td", null, botLink(r.bot), r.house ? " (house)" : ""),
      el("td", null, r.player !== r.bot ? `${r.id_name} (${r.player})` : r.id_name),
      ladderRating(r.rating, r.margin, r.provisional),
      el("td", "n", String(r.games)),
      el("td", "n", r.score === null ? "" : `${(100 * r.score).toFixed(1)}%`),
      ladderForfeits(r.forfeits),
      el("td", null, r.online ? "yes" : ""),
      el("td", "n", r.slots === null ? "" : String(r.slots)),
      el("td", "n", r.playing ? String(r.playing) : ""),
      el("td", null, r.last_seen)));
    if (!lines.length) {
      const empty = el("td", "note", "No bot yet.");
      empty.colSpan = headers.length;
      body.push(el("tr", null, empty));
    }
    return el("table", "standings", el("thead", null, head), el("tbody", null, ...body));
  }

  function ladderStatus(s) {
    return `${s.online} online · ${s.running} games being played · ${s.games} games rated · ${s.variant} · time control ${s.tc} · ${s.concurrency} at once`;
  }

  // A list of counted games: each opens in the viewer here, and links to its own page.
  function ladderGames(node, games, open) {
    clear(node);
    for (const g of games) {
      const b = el("button", null, `game ${g.id}: ${g.first} vs ${g.second}, ${g.result} ${g.reason}`);
      b.type = "button";
      b.addEventListener("click", () => open(g.id));
      const page = el("a", null, "page");
      page.href = `/game/${g.id}`;
      node.append(el("li", null, b, " ", page));
    }
    if (!games.length) node.append(el("li", "note", "none yet"));
  }

  // A viewer fed by /api/game/ID (the game in the viewer's encoding, with its two names).
  function ladderViewer(status, emptyText) {
    const viewer = new Viewer(document.getElementById("viewer"), [], { emptyText });
    const open = (id, scroll) => fetch(`/api/game/${id}`)
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(r.statusText))))
      .then((data) => {
        viewer.names = data.names;
        viewer.show(data.game, 0);
        if (scroll) document.getElementById("games").scrollIntoView();
      })
      .catch((e) => { status.textContent = `cannot load game ${id}: ${e.message}`; });
    return open;
  }

  function pageData(id) {
    return JSON.parse(document.getElementById(id).textContent);
  }

  function bootLadder() {
    const status = document.getElementById("status");
    const open = ladderViewer(status, "Pick one of the last games to replay it here.");
    const onLadder = (s) => {
      status.textContent = ladderStatus(s);
      clear(document.getElementById("leaderboard-table")).append(leaderboard(s.lines));
      ladderGames(document.getElementById("recent"), s.recent, (id) => open(id, true));
      showNotices(s.notices);
    };
    follow(status, { ladder: onLadder, boards: showBoards }, "the ladder has stopped");
  }

  function bootBot() {
    const status = document.getElementById("status");
    const data = pageData("bot-data");
    const open = ladderViewer(status, "Pick one of the recent games to replay it here.");
    ratingChart(data.history);
    ladderGames(document.getElementById("recent"), data.recent, (id) => open(id, true));
    if (data.recent.length) open(data.recent[0].id, false);
  }

  function bootGame() {
    const data = pageData("game-data");
    const viewer = new Viewer(document.getElementById("viewer"), data.names);
    viewer.show(data.game);
  }

  // What other pages' scripts build on (tune.js: a tune's report and live page).
  window.QuartoArena = {
    Board, Viewer, pieceIcon, states, el, clear, table, chart, colour, PALETTE, follow, showBoards, gameList,
    showNotices, showProgress, liveViewer, reportGames, pieceDescription, plyToken,
  };
  document.addEventListener("DOMContentLoaded", () => {
    const page = document.body.dataset.page;
    if (page === "report") bootReport();
    else if (page === "live") bootLive();
    else if (page === "ladder") bootLadder();
    else if (page === "bot") bootBot();
    else if (page === "game") bootGame();
  });
})();
