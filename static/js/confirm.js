// Forms that undo work ask first: <form data-confirm="question">. A handler here rather than an
// inline onsubmit, which the Content-Security-Policy (script-src 'self') would refuse.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
