"""The cliff: where a configuration turns metastable (issue 26; docs/cliff.md).

``trigger`` (the map's trigger as a scenario event), ``point`` (an operating point, from a scenario or a live
minute), ``predict`` (the retrying server's chain on a point: stable, metastable, unstable or mixed) and ``zone``
(the distance to the cliff in closed form: the console's gauge and the debrief's sentence). The chain itself is
``model.retry_chain``; the map's runs are ``batch.cliff_map``.
"""
