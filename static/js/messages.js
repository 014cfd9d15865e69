// Notes after an action ("Search started.") go away after a while, so a live page does not keep
// saying what is no longer true; errors stay until the next page.
(function () {
  var LIFE_MS = 8000;
  setTimeout(function () {
    document.querySelectorAll(".messages li[data-expires]").forEach(function (li) {
      var list = li.parentNode;
      li.remove();
      if (!list.children.length) list.remove();
    });
  }, LIFE_MS);
})();
