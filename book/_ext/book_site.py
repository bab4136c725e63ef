"""Two fixes to the HTML pages of the published book, loaded through _config.yml's local_extensions.

* sphinx-thebe's configuration script reaches each page twice (once with the file name None, once
  with ''), so the page declares `THEBE_JS_URL` twice, a JavaScript error on every page. A page
  keeps one copy of each script.
* Colab opens notebooks from GitHub only as `.ipynb`, and the chapters are MyST Markdown. The Colab
  button opens the executed notebook that the publishing workflow pushes to the `gh-pages` branch
  (the book's `_sources/<page>.ipynb`, which the download button also serves).
"""
PAGES_BRANCH = "gh-pages"


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    """Keep the first of scripts that are the same; an inline script's file name is None or ''."""
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def colab_opens_executed_notebook(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":  # .../github/<org>/<repo>/blob/<branch>/<page>.md
                repository = button["url"].split("/blob/")[0]
                button["url"] = f"{repository}/blob/{PAGES_BRANCH}/_sources/{pagename}.ipynb"


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts, priority=900)
    app.connect("html-page-context", colab_opens_executed_notebook, priority=502)  # after the theme's 501
    return {"parallel_read_safe": True, "parallel_write_safe": True}
