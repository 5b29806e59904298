// Draws every [data-figure] element from the JSON block of the same id (Plotly from the installed package).
document.querySelectorAll("[data-figure]").forEach(function (el) {
  var source = document.getElementById(el.dataset.figure);
  if (!source || !window.Plotly) return;
  var figure = JSON.parse(source.textContent);
  Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true });
});
