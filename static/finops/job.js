// Follows a background re-attribution job until it ends, then reloads so the figures are fresh.
(function () {
  var box = document.getElementById("job");
  if (!box || box.dataset.status === "succeeded" || box.dataset.status === "failed") return;
  function poll() {
    fetch(box.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (job) {
        document.getElementById("job-status").textContent = job.status;
        document.getElementById("job-progress").value = job.percent;
        document.getElementById("job-detail").textContent = job.total ? job.done + " of " + job.total + " day ranges rebuilt" : "";
        if (job.status === "succeeded" || job.status === "failed") { window.location.reload(); }
        else { setTimeout(poll, 1000); }
      });
  }
  poll();
})();
