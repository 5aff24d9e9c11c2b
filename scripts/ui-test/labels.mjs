// The graph's label checks, run in the page by page.evaluate (so each
// function is self-contained: it sees the page's document, nothing of
// this module).

// overlappingLabels runs in the page: the pairs of non-empty text
// elements under sel whose boxes intersect by more than half a pixel.
export function overlappingLabels(sel) {
  const boxes = [...document.querySelectorAll(sel + " text")].filter((t) => t.textContent.trim() !== "").map((t) => {
    const b = t.getBBox(), m = t.getCTM();
    const xs = [b.x, b.x + b.width].flatMap((x) => [b.y, b.y + b.height].map((y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]));
    return { text: t.textContent, x0: Math.min(...xs.map((p) => p[0])), x1: Math.max(...xs.map((p) => p[0])),
      y0: Math.min(...xs.map((p) => p[1])), y1: Math.max(...xs.map((p) => p[1])) };
  });
  const out = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0), h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
      if (w > 0.5 && h > 0.5) out.push(`"${a.text}" and "${b.text}" (${w.toFixed(1)}x${h.toFixed(1)} px)`);
    }
  }
  return out;
}

// overflowingNodeText runs in the page: the texts of the nodes under sel
// whose box leaves their node's rectangle.
export function overflowingNodeText(sel) {
  const out = [];
  for (const g of document.querySelectorAll(sel + " .node")) {
    const r = g.querySelector("rect").getBBox();
    for (const t of g.querySelectorAll("text")) {
      if (t.textContent.trim() === "") continue;
      const b = t.getBBox();
      if (b.x < r.x - 0.5 || b.x + b.width > r.x + r.width + 0.5 || b.y < r.y - 0.5 || b.y + b.height > r.y + r.height + 0.5) out.push(`"${t.textContent}" in ${g.dataset.id}`);
    }
  }
  return out;
}
