"""The neutral base every layer stands on: errors, files on disk, worker processes, NLTK base classes.

- :mod:`egnlp.base.errors`: egnlp's own error types, the only ones the command line shows as one line;
- :mod:`egnlp.base.files`: reading and decoding files, atomic writes, the ``.npz`` model archives;
- :mod:`egnlp.base.workers`: blocks of work decoded by forked worker processes (``--jobs``);
- :mod:`egnlp.base.nltk_bases`: NLTK base classes attached only when NLTK is imported.

Nothing here imports any other part of egnlp.
"""
