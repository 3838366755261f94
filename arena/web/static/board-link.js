/* quarto-arena: "open on the board" links on the pages that show games (report.html, the live page, the ladder's
 * pages), when an analysis board runs on this machine (quarto-arena board).
 *
 * The board's address comes from <meta name="quarto-board"> (a served page: its server found the running board) or
 * from this page's own query, ?board=http://127.0.0.1:PORT/ (report.html, a file, which the board prints). Only a
 * loopback address is taken. The link carries the game itself (variant, start, turns, players, result) in its query:
 * the board needs nothing else, and nothing of this page's. The viewer (static/quarto.js) says which game it shows
 * with a "quarto-viewer-step" event; the link follows it, at the turn shown. */
(function () {
  "use strict";

  const LOOPBACK = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d{1,5}\/$/;
  const HEX = "0123456789abcdef";

  function boardAddress() {
    const meta = document.querySelector('meta[name="quarto-board"]');
    const given = (meta && meta.content) || new URLSearchParams(location.search).get("board") || "";
    return LOOPBACK.test(given) ? given : null;
  }

  function startString(board, hand) {
    if (board.every((p) => p < 0) && hand < 0) return "startpos";
    const rows = [];
    for (let r = 3; r >= 0; r--) rows.push(board.slice(4 * r, 4 * r + 4).map((p) => (p >= 0 ? HEX[p] : ".")).join(""));
    return `${rows.join("/")} ${hand >= 0 ? HEX[hand] : "-"}`;
  }

  function linkFor(address, viewer, game, k) {
    const q = new URLSearchParams();
    if (game.variant) q.set("variant", game.variant);
    q.set("start", startString(game.board, game.hand));
    q.set("turns", game.plies.map((ply) => window.QuartoArena.plyToken(ply)).join(" "));
    q.set("white", viewer.name(game, 0));
    q.set("black", viewer.name(game, 1));
    q.set("result", game.result);
    if (game.reason) q.set("reason", game.reason);
    q.set("k", String(k));
    return `${address}?${q.toString()}`;
  }

  // Run before the pages boot (a deferred or a last script; they boot on DOMContentLoaded): the first game shown
  // gets its link too.
  const address = boardAddress();
  if (address && document.body.dataset.page !== "board") {
    document.addEventListener("quarto-viewer-step", (e) => {
      const { viewer, game, k } = e.detail;
      let a = viewer.controls.querySelector("a.board-link");
      if (!a) {
        a = document.createElement("a");
        a.className = "board-link";
        a.target = "_blank";
        a.rel = "noopener";
        a.textContent = "open on the board";
        a.title = `this game, at this turn, on the analysis board at ${address}`;
        viewer.controls.append(a);
      }
      a.href = linkFor(address, viewer, game, k);
    });
  }
})();
