// The API reference page (Redoc): its sidebar always draws the Redocly logo from cdn.redoc.ly, and the product
// loads nothing from the internet. React sets an <img>'s src as an attribute, then again as a property (so its
// load events fire): swap that logo for a local file both ways, before anything is fetched. A static file, not
// an inline script, so the Content-Security-Policy can forbid inline scripts everywhere.
(() => {
  const localLogo = document.currentScript.dataset.logo;
  const fromRedocly = (value) => { try { return new URL(String(value), location.href).hostname === "cdn.redoc.ly"; } catch (e) { return false; } };
  const local = (value) => fromRedocly(value) ? localLogo : value;
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    return setAttribute.call(this, name, this instanceof HTMLImageElement && name === "src" ? local(value) : value);
  };
  const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    ...src, set(value) { src.set.call(this, local(value)); },
  });
})();
