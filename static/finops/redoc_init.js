// Start Redoc on the schema named by its container (drf-spectacular does this in an inline script, which the
// Content-Security-Policy forbids).
(() => {
  const container = document.getElementById("redoc-container");
  let settings = {};
  try { settings = JSON.parse(container.dataset.settings) || {}; } catch (e) { /* no settings configured */ }
  Redoc.init(container.dataset.schemaUrl, settings, container);
})();
