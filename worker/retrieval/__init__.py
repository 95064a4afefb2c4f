"""Retrieval: embeddings, keyword and vector search, fusion and ranking, context building."""
