// The inspector's one script. The pages read without it; it adds stepping
// through a process's history (buttons and the arrow keys), live updates
// from the service's server-sent events, and a dialog before an action.
"use strict";

(function () {
  const body = document.body;

  // The states active in `configuration` and every state above them.
  function activePaths(configuration) {
    const paths = new Set();
    for (const leaf of configuration) {
      const parts = leaf.split(".");
      for (let i = parts.length; i > 0; i--) paths.add(parts.slice(0, i).join("."));
    }
    return paths;
  }

  function highlight(configuration) {
    const paths = activePaths(configuration);
    for (const shape of document.querySelectorAll("#diagram [data-state]")) {
      shape.classList.toggle("active", paths.has(shape.getAttribute("data-state")));
    }
  }

  // Shows the configuration after history entry `n` (1-based).
  function showStep(n) {
    const steps = Number(body.dataset.steps || 0);
    if (steps === 0) return;
    n = Math.min(Math.max(n, 1), steps);
    body.dataset.step = String(n);
    const rows = document.querySelectorAll("#history tr[data-entry]");
    for (const row of rows) {
      const current = Number(row.dataset.entry) === n;
      row.classList.toggle("current", current);
      if (current) {
        row.setAttribute("aria-current", "step");
        highlight(JSON.parse(row.dataset.configuration));
      } else {
        row.removeAttribute("aria-current");
      }
    }
    const label = document.getElementById("step");
    if (label) label.textContent = String(n);
    setLink("previous", n > 1 ? n - 1 : null);
    setLink("next", n < steps ? n + 1 : null);
    // At the last entry the page follows the newest one as events come.
    history.replaceState(null, "", stepUrl(n === steps ? null : n));
  }

  function stepUrl(n) {
    const url = new URL(location.href);
    if (n === null) url.searchParams.delete("step"); else url.searchParams.set("step", String(n));
    return url;
  }

  // A step link with an address is a link (Tab reaches it, Enter follows
  // it); without one it is disabled.
  function setLink(id, n) {
    const element = document.getElementById(id);
    if (!element) return;
    element.classList.toggle("disabled", n === null);
    if (n === null) {
      element.removeAttribute("href");
      element.setAttribute("aria-disabled", "true");
    } else {
      element.href = stepUrl(n).toString();
      element.removeAttribute("aria-disabled");
    }
  }

  function step(delta) {
    showStep(Number(body.dataset.step || 0) + delta);
  }

  document.addEventListener("click", (event) => {
    const target = event.target.closest("#previous, #next");
    if (!target) return;
    event.preventDefault();
    if (target.hasAttribute("href")) step(target.id === "next" ? 1 : -1);
  });

  document.addEventListener("keydown", (event) => {
    if (!body.dataset.steps || event.altKey || event.ctrlKey || event.metaKey) return;
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select") return;
    if (event.key === "ArrowLeft") { event.preventDefault(); step(-1); }
    if (event.key === "ArrowRight") { event.preventDefault(); step(1); }
  });

  // A form that acts asks first; its answer goes with it.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    const question = form.dataset.confirm;
    if (!question) return;
    if (!window.confirm(question)) { event.preventDefault(); return; }
    const field = form.querySelector("input[name=confirmed]");
    if (field) field.value = "yes";
  });

  // Live updates: on each change, the page is read again and its content
  // replaced, keeping the step shown and the focus where they were. Changes
  // that come while a read is under way, or within a second of the last
  // one, are read together: a busy service is not read once per event.
  const QUIET_MS = 1000;
  let reloading = null;
  let again = false;
  let lastRead = 0;
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  async function reload() {
    if (reloading) { again = true; return reloading; }
    reloading = (async () => {
      do {
        again = false;
        await pause(Math.max(0, lastRead + QUIET_MS - Date.now()));
        lastRead = Date.now();
        const response = await fetch(location.href, { headers: { Accept: "text/html" }, cache: "no-store" });
        if (!response.ok) break;
        const next = new DOMParser().parseFromString(await response.text(), "text/html");
        const main = document.getElementById("main");
        const focused = document.activeElement && document.activeElement.id;
        for (const name of ["step", "steps"]) {
          const value = next.body.dataset[name];
          if (value === undefined) delete body.dataset[name]; else body.dataset[name] = value;
        }
        main.replaceChildren(...next.getElementById("main").childNodes);
        if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
        if (body.dataset.steps) showStep(Number(body.dataset.step));
        body.dataset.updates = String(Number(body.dataset.updates || 0) + 1);
        const live = document.getElementById("live");
        if (live) live.textContent = "Updated " + new Date().toLocaleTimeString();
      } while (again);
    })().finally(() => { reloading = null; });
    return reloading;
  }

  if (body.dataset.events && window.EventSource) {
    const source = new EventSource(body.dataset.events);
    source.addEventListener("change", reload);
    source.addEventListener("lagged", reload);
    // What changed between the page's making and the stream's opening (or
    // while it was reconnecting) came with no event: read the page again.
    source.addEventListener("open", () => {
      reload().then(() => { body.dataset.live = "yes"; });
    });
  }

  if (body.dataset.steps) showStep(Number(body.dataset.step));
})();
