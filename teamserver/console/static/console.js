// A small improvement over the plain pages, which work without it:
// "/" moves the focus to the text filter of a memory list.
document.addEventListener("keydown", function (e) {
  if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
  var t = e.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
  var q = document.getElementById("f-q");
  if (q) {
    e.preventDefault();
    q.focus();
  }
});
