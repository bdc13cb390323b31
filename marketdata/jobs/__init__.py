"""Oracle job definitions (partnerOracleDetails.jobDefinition, kind QUOTES): the language,
its validation and its evaluation, in pure Python (docs/marketdata.md, "Job definitions").

    job = parse_job(text)                       # JobDefinitionError (400, field = the bad task's path)
    evaluation = evaluate(job, timeout_seconds=10)
    evaluation.result                           # Decimal | None; .to_record() for the log
    to_mantissa(evaluation.result, -8)          # the feed's i64 mantissa
"""

from marketdata.jobs.definition import Job, job_hash, parse_job
from marketdata.jobs.errors import JobDefinitionError
from marketdata.jobs.evaluate import Evaluation, SourceRecord, evaluate
from marketdata.jobs.numbers import MantissaError, to_mantissa

__all__ = ["Evaluation", "Job", "JobDefinitionError", "MantissaError", "SourceRecord", "evaluate", "job_hash", "parse_job", "to_mantissa"]
