// Connecting an API account: the base URL's placeholder follows the connector, and "Test connection" asks the
// server without leaving the page, so the typed key stays in its field (the server never sends a key back).
(function () {
  var form = document.getElementById("account-form");
  if (!form) return;
  var result = document.getElementById("connection-result");
  var button = document.getElementById("test-connection");
  var baseUrl = form.querySelector("input[name=base_url]");
  var connector = form.querySelector("select[name=connector]");

  var secret = form.querySelector("input[name=secret]");
  var secretHelp = secret && document.getElementById(secret.id + "_helptext");
  if (connector && baseUrl && secret && secretHelp) {
    var defaults = JSON.parse(baseUrl.dataset.defaults || "{}");
    var keyHelp = JSON.parse(secret.dataset.help || "{}");
    connector.addEventListener("change", function () {
      baseUrl.placeholder = defaults[connector.value] || "";
      if (keyHelp[connector.value]) secretHelp.textContent = keyHelp[connector.value];
    });
  }

  function show(ok, text) {
    result.hidden = false;
    result.className = ok ? "check-ok" : "error";
    result.setAttribute("role", ok ? "status" : "alert");
    result.textContent = text;
  }

  button.addEventListener("click", function (ev) {
    ev.preventDefault();
    var data = new FormData(form);
    data.set("action", "test");
    button.disabled = true;
    show(true, "Testing: asking the provider for yesterday's usage…");
    fetch(form.getAttribute("action") || window.location.href, { method: "POST", body: data, headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (answer) { show(answer.ok, answer.message); })
      .catch(function (e) { show(false, "The test did not complete (" + e.message + "); try again."); })
      .then(function () { button.disabled = false; });
  });
})();
