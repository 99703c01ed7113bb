"""Write operations and computed documents of the evaluation app: the report (``report``), the exports
(``exports``) and quality control (``quality``)."""
