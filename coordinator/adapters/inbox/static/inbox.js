// The inbox, kept current: on each server-sent event, fetch the list and
// merge it in place. A question still waiting is left as it is (a choice
// made or text typed in it stays); a new one is added where the server
// put it; one answered elsewhere, or closed, is removed. An answer is
// posted in the background, and the page the server answers with is
// merged the same way, its notice shown: answering one question leaves
// what was typed in the others. The page works without this script (a
// form posts as any form; reload to see what changed).
"use strict";
(function () {
  const inbox = document.getElementById("inbox");
  if (!inbox || !window.EventSource) return;
  let fetching = false;
  let again = false;

  function merge(html) {
    const fresh = document.createElement("main");
    fresh.innerHTML = html;
    const wanted = new Set(Array.from(fresh.querySelectorAll("[id]"), (node) => node.id));
    for (const node of Array.from(inbox.querySelectorAll(".question, .group, #empty, #skipped"))) {
      if (!wanted.has(node.id) || node.id === "skipped") node.remove();
    }
    let previous = null;
    for (const group of Array.from(fresh.children)) {
      let here = group.id ? document.getElementById(group.id) : null;
      if (!here) {
        here = group.cloneNode(true);
        if (previous) previous.after(here); else inbox.prepend(here);
      } else {
        let before = null;
        for (const question of Array.from(group.querySelectorAll(".question"))) {
          let mine = document.getElementById(question.id);
          if (!mine) {
            mine = question.cloneNode(true);
            const first = here.querySelector(".question");
            if (before) before.after(mine);
            else if (first) first.before(mine);
            else here.append(mine);
          }
          before = mine;
        }
      }
      previous = here;
    }
    const count = inbox.querySelectorAll(".question").length;
    document.title = "Inquiry inbox (" + count + ")";
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const response = await fetch("questions", { credentials: "same-origin", cache: "no-store" });
      if (response.ok) merge(await response.text());
    } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  function notice(page) {
    const said = page.getElementById("notice");
    const shown = document.getElementById("notice");
    if (shown) shown.remove();
    if (said) inbox.before(document.importNode(said, true));
  }

  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("answer")) return;
    event.preventDefault();
    const body = new URLSearchParams(new FormData(form));
    const response = await fetch(form.action, { method: "POST", body, credentials: "same-origin" });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const list = page.getElementById("inbox");
    if (list) merge(list.innerHTML);
    notice(page);
  });

  new EventSource("events").onmessage = refresh;
})();
