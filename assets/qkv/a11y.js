/*
 * Loaded on every page of the book (added by _ext/qkv_offline.py). Fixes what axe-core reports as serious in the
 * theme's and the widget manager's markup, which the book cannot change at its source:
 *
 * 1. The search button is labelled "Search" but shows "Search Ctrl+K", and a folded cell's <summary> is labelled
 *    "Toggle hidden content" but shows "Show code cell source": a spoken name that differs from the visible text
 *    (axe: label-content-name-mismatch). Drop the label, so that the visible text is the name.
 * 2. The colour-mode button is labelled "Color mode"; its three icons carry titles (Light, Dark, System Settings)
 *    that count as its text. The icons are decorative: hide them from assistive technology, keep the label.
 * 3. The handles of ipywidgets' sliders (noUiSlider, role="slider") have no name (axe: aria-input-field-name).
 *    Name each after its widget's description ("query i", "d_model"), now and when widgets render later.
 */
(function () {
  "use strict";
  function fixStatic() {
    document.querySelectorAll(".search-button__button[aria-label], details > summary[aria-label]").forEach(function (el) {
      if (el.textContent.trim()) el.removeAttribute("aria-label");
    });
    document.querySelectorAll(".theme-switch-button .theme-switch").forEach(function (icon) {
      icon.setAttribute("aria-hidden", "true");
      icon.removeAttribute("title");
    });
  }
  function nameSliders() {
    document.querySelectorAll(".noUi-handle:not([aria-label])").forEach(function (handle) {
      var widget = handle.closest(".widget-slider, .widget-hslider, .widget-vslider, .jupyter-widgets");
      var label = widget && widget.querySelector(".widget-label");
      var text = label && label.textContent.trim();
      handle.setAttribute("aria-label", text || "slider");
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    fixStatic();
    nameSliders();
    new MutationObserver(nameSliders).observe(document.body, { childList: true, subtree: true });
  });
})();
