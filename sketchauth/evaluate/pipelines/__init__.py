"""Feature pipelines measured: error rates next to the unprotected reference (:mod:`.evaluation`),
security figures (:mod:`.security`) and the evaluation report's target for a pipeline (:mod:`.report_target`)."""
