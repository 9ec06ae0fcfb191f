// Starts the oomscope page. The Content-Security-Policy forbids inline
// scripts, so trunk's loader lives here: the <script> tag that loads this
// file carries the hashed names of the app's JS glue and wasm module.
(function () {
  "use strict";
  var script = document.currentScript;
  var status = document.getElementById("boot-status");
  function fail(reason) {
    if (status) {
      status.textContent = "oomscope could not start: " + reason +
        ". It needs a browser with WebAssembly and JavaScript modules.";
      status.classList.add("boot-failed");
    }
  }
  if (!script || typeof WebAssembly !== "object") {
    fail("WebAssembly is not available");
    return;
  }
  import(script.dataset.js)
    .then(function (glue) {
      return glue.default({ module_or_path: script.dataset.wasm });
    })
    .then(function () {
      if (status) status.remove();
    })
    .catch(function (error) {
      fail(String(error && error.message ? error.message : error));
    });
})();
