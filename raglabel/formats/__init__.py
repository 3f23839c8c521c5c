"""The file formats raglabel reads and writes: TREC runs and qrels, samples, queries,
passages and BEIR corpora, grade maps, the JSON reports and their schemas. Every reader
checks what it reads and names the file and line of anything wrong; nothing here opens
the project file.
"""
