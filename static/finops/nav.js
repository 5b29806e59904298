// The header's menu on a narrow screen: the "Menu" button shows and hides the links (app.css decides at which
// width the button appears). Without this script the button stays hidden and the links simply wrap.
(function () {
  var header = document.querySelector(".topbar");
  var button = header && header.querySelector(".menu-toggle");
  if (!button) return;
  var menu = document.getElementById(button.getAttribute("aria-controls"));

  function isOpen() { return button.getAttribute("aria-expanded") === "true"; }
  function setOpen(open) {
    button.setAttribute("aria-expanded", open ? "true" : "false");
    header.classList.toggle("menu-open", open);
  }

  header.classList.add("collapsible");
  button.hidden = false;
  button.addEventListener("click", function () { setOpen(!isOpen()); });
  // Escape closes the open menu and gives the focus back to its button, as a disclosure should.
  header.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && isOpen()) {
      setOpen(false);
      button.focus();
    }
  });
  // A click or a tab outside the header closes it.
  document.addEventListener("click", function (event) { if (isOpen() && !header.contains(event.target)) setOpen(false); });
  menu.addEventListener("focusout", function (event) {
    if (isOpen() && event.relatedTarget && !header.contains(event.relatedTarget)) setOpen(false);
  });
})();
