"""The in-browser page of `rnmt export --web`: its sources (index.html and the JavaScript
beside this file) and the Python that writes a page for an export (`rnmt.web.page`)."""
