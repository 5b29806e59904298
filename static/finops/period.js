// The period picker: a preset applies at once; "Custom…" shows the two day boxes.
document.querySelectorAll("[data-period-select]").forEach(function (select) {
  var form = select.form, dates = form.querySelector(".custom-dates");
  select.addEventListener("change", function () {
    var custom = select.value === "custom";
    dates.hidden = !custom;
    dates.querySelectorAll("input").forEach(function (input) { input.disabled = !custom; });
    if (!custom) form.submit();
  });
});
