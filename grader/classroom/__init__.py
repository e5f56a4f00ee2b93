"""Stage 9, the whole class: batch, the cluster and its certificates, similarity, platforms' exports, portfolios.

(Stage 8 is the spine at the top: grader/grading.py grades one submission; cli.py is the door.)"""
