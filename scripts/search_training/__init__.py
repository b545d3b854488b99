"""The pieces of ``scripts/train_search_model.py``: the frozen lower layers' cached outputs,
the trained upper layers, resumable checkpoints and the query-side linear map."""
