"""The HTTP layer: how requests come in and answers go out.

``routes`` (``@endpoint`` declarations, request decoding), ``body`` (bounded body reading,
JSON answers, redirects to presigned blob URLs), ``problem`` (the one 4xx exception and the
field checks every layer uses), ``auth`` (the middleware: who is calling, and may they),
``openapi`` (the document generated from the declarations).  Handlers are
:mod:`wisp.server.views`, their types :mod:`wisp.server.schemas`.
"""
