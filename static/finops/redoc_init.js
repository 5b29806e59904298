// Start Redoc on the schema named by its container (drf-spectacular does this in an inline script, which the
// Content-Security-Policy forbids).
(() => {
  const container = document.getElementById("redoc-container");
  Redoc.init(container.dataset.schemaUrl, JSON.parse(container.dataset.settings || "{}"), container);
})();
