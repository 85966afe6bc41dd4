/*
 * Loaded on every page of the book (added by _ext/qkv_offline.py). Fixes what axe-core reports as serious in the
 * theme's and the widget manager's markup, which the book cannot change at its source:
 *
 * 1. The search button is labelled "Search" but shows "Search Ctrl+K", and a folded cell's <summary> is labelled
 *    "Toggle hidden content" but shows "Show code cell source": a spoken name that differs from the visible text
 *    (axe: label-content-name-mismatch). Drop the label, so that the visible text is the name.
 * 2. The colour-mode button is labelled "Color mode"; its three icons carry titles (Light, Dark, System Settings)
 *    that count as its text (as a title attribute, or as a <title> inside the <svg> that Font Awesome puts in
 *    their place). The icons are decorative: hide them from assistive technology, keep the label.
 * 3. The sidebar's expand buttons (a <summary> holding only a chevron icon, next to a chapter that has a lab as its
 *    section) have no text (axe: summary-name). Name each after its chapter: "Sections of 1. Attention as ...".
 * 4. The bibliography is a role="list" whose entries have role="doc-biblioentry", a role that ARIA 1.3 deprecated:
 *    axe-core no longer counts such an entry as a list item and sees the links inside it as children the list may
 *    not have (axe: aria-required-children). Make each entry a plain "listitem".
 * 5. The handles of ipywidgets' sliders (noUiSlider, role="slider") have no name (axe: aria-input-field-name).
 *    Name each after its widget's description ("query i", "d_model"), now and when widgets render later.
 */
(function () {
  "use strict";
  function fixStatic() {
    document.querySelectorAll(".search-button__button[aria-label], details > summary[aria-label]").forEach(function (el) {
      if (el.textContent.trim()) el.removeAttribute("aria-label");
    });
    document.querySelectorAll(".theme-switch-button .theme-switch").forEach(function (icon) {
      if (icon.getAttribute("aria-hidden") !== "true") icon.setAttribute("aria-hidden", "true");
      if (icon.hasAttribute("title")) icon.removeAttribute("title");
      // Font Awesome may already have turned the <i> into an <svg> with a <title> child naming it
      if (icon.hasAttribute("aria-labelledby")) icon.removeAttribute("aria-labelledby");
      icon.querySelectorAll("title").forEach(function (title) {
        title.remove();
      });
    });
    document.querySelectorAll('[role="list"] > [role="doc-biblioentry"]').forEach(function (entry) {
      entry.setAttribute("role", "listitem");
    });
    document.querySelectorAll("li.has-children > details > summary:not([aria-label])").forEach(function (summary) {
      if (summary.textContent.trim()) return;
      var link = summary.parentElement.parentElement.querySelector(":scope > a");
      var chapter = link ? link.textContent.trim() : "";
      var zh = (document.documentElement.lang || "").indexOf("zh") === 0;  // the Chinese edition
      summary.setAttribute("aria-label", zh ? (chapter || "本章") + "的各节" : "Sections of " + (chapter || "this chapter"));
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
    // Widgets render after the page loads, and the theme may redraw parts of it or set titles again: fix again on
    // every change. Each fix changes an attribute only when it is wrong, so this settles after one round.
    new MutationObserver(function () {
      fixStatic();
      nameSliders();
    }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["title", "aria-label"] });
  });
})();
