/*
 * Loaded on pages with saved ipywidgets state, after require.js and before the widget manager (embed-amd.js);
 * the order is set by `nb_ipywidgets_js` in _config.yml. Two small jobs, so the widgets render offline:
 *
 * 1. The widget manager finds its font files (Font Awesome) beside the RequireJS module that asks for them. Its
 *    modules are named @jupyter-widgets/base, /controls, /html-manager and /html-manager/dist/libembed-amd, and
 *    each one's style sheet resolves its font URLs against that module's place when the module starts, before
 *    the manager reads window.__jupyter_widgets_assets_path__. Left alone, RequireJS places them next to the page
 *    (chapters/@jupyter-widgets/...), where there is nothing; the browser asks for a font only when an icon needs
 *    it, so the 404s came and went. Map every @jupyter-widgets name to the copy served with the book, and set the
 *    manager's own override too.
 * 2. The widget manager typesets descriptions with MathJax 2's API (MathJax.Hub.Queue) whenever window.MathJax
 *    exists; the book loads MathJax 3, which has no Hub. Give it a Hub.Queue that calls MathJax 3's typesetPromise.
 *    MathJax is loaded with `defer`, so it exists once the document is parsed, and widgets render later, on `load`.
 * 3. The widget manager writes images without alt text. The book's Sphinx extension (_ext/qkv_offline.py) wraps the
 *    widget views of a cell that has `mystnb: image: alt:` metadata in <div class="qkv-widget-alt" data-qkv-alt>;
 *    every image the manager puts inside such a div gets that text as its alt, now and after each redraw.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (script && script.src) {
    var assets = new URL("../vendor/html-manager/", script.src).href;
    window.__jupyter_widgets_assets_path__ = assets;
    if (window.requirejs && window.requirejs.config) {
      var folder = assets.replace(/\/$/, "");
      // RequireJS takes the longest matching prefix: module "@jupyter-widgets/controls" is at folder/controls.js
      // (fonts at folder/<hash>.woff2); the library module keeps its own name under dist/.
      window.requirejs.config({
        paths: { "@jupyter-widgets": folder, "@jupyter-widgets/html-manager/dist": folder },
      });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    var mathjax = window.MathJax;
    if (!mathjax || mathjax.Hub || !mathjax.startup || !mathjax.startup.promise) {
      return; // no MathJax 3 on this page (or a MathJax 2 that has its own Hub)
    }
    mathjax.Hub = {
      Queue: function (command) {
        // command is ["Typeset", MathJax.Hub, element]
        var element = Array.isArray(command) ? command[2] : undefined;
        return mathjax.startup.promise
          .then(function () {
            return mathjax.typesetPromise(element ? [element] : undefined);
          })
          .catch(function (error) {
            console.error("MathJax could not typeset a widget's text:", error);
          });
      },
    };
  });
  function labelImages(root) {
    var images = root.querySelectorAll ? root.querySelectorAll(".qkv-widget-alt img:not([alt])") : [];
    Array.prototype.forEach.call(images, function (img) {
      img.setAttribute("alt", img.closest(".qkv-widget-alt").getAttribute("data-qkv-alt"));
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    labelImages(document);
    new MutationObserver(function () {
      labelImages(document);
    }).observe(document.body, { childList: true, subtree: true });
  });
})();
