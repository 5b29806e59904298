// A form with data-confirm asks before it is sent (a delete, say). A static file, not an onsubmit attribute: the
// Content-Security-Policy runs no inline script.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
