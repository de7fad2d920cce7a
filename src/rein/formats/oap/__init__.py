"""Open Agent Profile (OAP 1.0) documents: reading, validating and digesting.

Pure: nothing here resolves, narrows or writes. That is :mod:`rein.profiles`.
"""

from __future__ import annotations

from rein.formats.oap.digest import profile_digest, spec_digest
from rein.formats.oap.document import OapDocument, load_oap, load_oap_text
from rein.formats.oap.risk import proposal_risk
from rein.formats.oap.validate import OapReport, validate_document, validate_file

__all__ = [
    "OapDocument",
    "OapReport",
    "load_oap",
    "load_oap_text",
    "profile_digest",
    "proposal_risk",
    "spec_digest",
    "validate_document",
    "validate_file",
]
