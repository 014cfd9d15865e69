"""Views, one module per area. They stay thin: parse the request, call a service or a
selector, render."""
