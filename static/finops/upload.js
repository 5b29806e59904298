// Upload with a progress bar, then follow the import run until it succeeds or fails.
(function () {
  var form = document.getElementById("upload-form");
  if (!form) return;
  var bar = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var zone = document.getElementById("dropzone");
  var input = form.querySelector("input[type=file]");

  ["dragover", "dragenter"].forEach(function (e) { zone.addEventListener(e, function (ev) { ev.preventDefault(); zone.classList.add("over"); }); });
  ["dragleave", "drop"].forEach(function (e) { zone.addEventListener(e, function () { zone.classList.remove("over"); }); });
  zone.addEventListener("drop", function (ev) { ev.preventDefault(); input.files = ev.dataTransfer.files; show("Ready: " + input.files[0].name); });
  input.addEventListener("change", function () { if (input.files[0]) show("Ready: " + input.files[0].name); });

  // A failure is said as one: the bar turns red (full: the attempt is over), the text is an alert read out at once.
  function show(text, bad) {
    form.querySelector(".progress").hidden = false;
    status.textContent = text;
    status.className = bad ? "error-text" : "";
    status.setAttribute("role", bad ? "alert" : "status");
    bar.classList.toggle("failed", !!bad);
    if (bad) bar.value = 100;
  }

  function accountLink(url) {
    var link = document.createElement("a"); link.href = url; link.textContent = "See the account"; status.appendChild(link);
  }

  function follow(url, accountUrl) {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (run) {
        if (run.status === "succeeded") {
          bar.value = 100;
          show("Imported: read " + run.lines_read + ", written " + run.lines_written + ", replaced " + run.lines_replaced + ". ");
          accountLink(accountUrl);
        } else if (run.status === "failed") {
          show("Import failed, nothing was written: " + run.error + " ", true);
          accountLink(accountUrl);
        } else {
          show(run.status === "running" ? "Importing…" : "Queued for import…");
          setTimeout(function () { follow(url, accountUrl); }, 1000);
        }
      })
      .catch(function () { show("Lost track of the import (the server did not answer); its account page shows how it ended.", true); accountLink(accountUrl); });
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    bar.classList.remove("failed");
    bar.value = 0;
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) { bar.value = Math.round((e.loaded / e.total) * 90); show("Uploading… " + Math.round((e.loaded / e.total) * 100) + " %"); }
    });
    xhr.addEventListener("load", function () {
      var body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = { error: "unexpected answer (HTTP " + xhr.status + ")" }; }
      if (xhr.status === 202) { bar.value = 92; follow(body.status_url, body.account_url); }
      else { show("Upload refused: " + body.error, true); }
    });
    xhr.addEventListener("error", function () { show("The upload did not reach the server; try again.", true); });
    xhr.send(new FormData(form));
  });
})();
