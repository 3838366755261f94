/* quarto-arena: a tune's pages (its report.html and its live page): the parameters now, each one's trajectory inside
 * its range, the perturbation and the learning rate over the iterations, the games per second; then what every run's
 * pages show (progress, boards, last games, the viewer), all built on quarto.js (window.QuartoArena).
 *
 * The data is arena/tune/pages.py's TuneHistory summary: params [{name, start, min, max, c_end, r_end, value, c, a,
 * r}], points {pairs, values[param][point]}, gains {iterations, c[param][i], a[param][i], r[param][i]}, rate {pairs,
 * games_per_s}. Strings go into the page as text only. */
(function () {
  "use strict";

  const Q = window.QuartoArena;
  const HEADERS = ["parameter", "value", "start", "min", "max", "c", "c_end", "r", "r_end"];

  function paramsTable(t) {
    const rows = t.params.map((p) => [p.name, p.value, p.start, p.min, p.max, p.c, p.c_end, p.r, p.r_end]);
    return Q.table({ headers: HEADERS, rows }, "params");
  }

  function series(xs, ys) {
    return xs.map((x, i) => ({ x, y: ys[i] }));
  }

  const LINEAR_PAIRS = { type: "linear", title: { display: true, text: "pairs counted" } };
  const ITERATIONS = { type: "linear", title: { display: true, text: "iteration (its pair's place in the schedule)" } };

  // One chart per parameter, its y axis the parameter's range, the start as a dashed line.
  function trajectories(t) {
    const box = document.getElementById("trajectory-charts");
    if (!box) return;
    const xs = t.points.pairs;
    t.params.forEach((p, i) => {
      const id = `trajectory-${i}`;
      if (!document.getElementById(id)) {
        const canvas = Q.el("canvas");
        canvas.id = id;
        canvas.setAttribute("aria-label", `${p.name} over the pairs`);
        box.append(Q.el("div", "chart small", canvas));
      }
      Q.chart(id, {
        type: "line",
        data: {
          datasets: [
            { label: p.name, data: series(xs, t.points.values[i]), borderColor: Q.colour(i), backgroundColor: Q.colour(i), pointRadius: 0, borderWidth: 2 },
            { label: `start ${p.start}`, data: [{ x: 0, y: p.start }, { x: Math.max(1, xs[xs.length - 1]), y: p.start }], borderColor: "#7f7f7f", borderDash: [6, 4], pointRadius: 0, borderWidth: 1 },
          ],
        },
        options: {
          animation: false, maintainAspectRatio: false,
          scales: { x: LINEAR_PAIRS, y: { min: p.min, max: p.max, title: { display: true, text: p.name } } },
        },
      });
    });
  }

  function gains(t) {
    const xs = t.gains.iterations;
    const line = (label, ys, i) => ({ label, data: series(xs, ys), borderColor: Q.colour(i), backgroundColor: Q.colour(i), pointRadius: 0, borderWidth: 2 });
    Q.chart("c-chart", {
      type: "line",
      data: { datasets: t.params.map((p, i) => line(`c ${p.name}`, t.gains.c[i].map((c) => c / (p.max - p.min)), i)) },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: ITERATIONS, y: { min: 0, title: { display: true, text: "c / (max - min)" } } },
      },
    });
    Q.chart("a-chart", {
      type: "line",
      data: { datasets: t.params.map((p, i) => line(`a ${p.name}`, t.gains.a[i], i)) },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: ITERATIONS, y: { type: "logarithmic", title: { display: true, text: "a (step numerator)" } } },
      },
    });
    Q.chart("r-chart", {
      type: "line",
      data: { datasets: t.params.map((p, i) => line(`r ${p.name}`, t.gains.r[i], i)) },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: ITERATIONS, y: { type: "logarithmic", title: { display: true, text: "r (learning rate)" } } },
      },
    });
    Q.chart("rate-chart", {
      type: "line",
      data: { datasets: [{ label: "games/s", data: series(t.rate.pairs, t.rate.games_per_s), borderColor: Q.PALETTE[0], backgroundColor: Q.PALETTE[0], pointRadius: 2, borderWidth: 2 }] },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { x: LINEAR_PAIRS, y: { min: 0, title: { display: true, text: "games per second" } } },
        plugins: { legend: { display: false } },
      },
    });
  }

  function showTune(t) {
    const box = document.getElementById("params-table");
    if (box) Q.clear(box).append(paramsTable(t), Q.el("pre", "options", t.params.map((p) => `-o ${p.name}=${Math.round(p.value)}`).join(" ")));
    trajectories(t);
    gains(t);
  }

  function bootTuneReport() {
    const data = JSON.parse(document.getElementById("run-data").textContent);
    trajectories(data.tune);
    gains(data.tune);
    Q.reportGames(data.games, data.summary.names);
  }

  function bootTuneLive() {
    const status = document.getElementById("status");
    const { viewer, open } = Q.liveViewer(status);
    const onSummary = (s) => {
      viewer.names = s.names;
      Q.showProgress(s, status);
      Q.gameList(document.getElementById("recent"), s.recent, (g) => open(g.id));
      Q.showNotices(s.notices);
    };
    Q.follow(status, { summary: onSummary, boards: Q.showBoards, tune: showTune }, "the server has stopped");
  }

  document.addEventListener("DOMContentLoaded", () => {
    const page = document.body.dataset.page;
    if (page === "tune-report") bootTuneReport();
    else if (page === "tune") bootTuneLive();
  });
})();
