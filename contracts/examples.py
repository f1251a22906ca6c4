"""Output contracts used by the example stages in stages.yaml.

Each is an ordinary pydantic model: the compiler projects its JSON Schema for the
model's dialect, shows it in the messages and validates replies against it.
"""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class Currency(StrEnum):
    """ISO 4217 codes the example accepts."""

    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"


class LineItem(BaseModel):
    """One invoice line."""

    description: str = Field(description="What was sold, as printed on the invoice.")
    quantity: int = Field(ge=1, description="Units sold.")
    unit_price: float = Field(ge=0, description="Price of one unit, in the invoice currency.")
    sku: str | None = Field(default=None, description="Stock-keeping unit, when printed.")


class Party(BaseModel):
    """A seller or buyer."""

    name: str
    vat_id: str | None = Field(default=None, pattern=r"^[A-Z]{2}[0-9A-Z]{2,12}$")
    address: str | None = None


class Invoice(BaseModel):
    """An invoice extracted from a document: nested, with optional fields and enums."""

    number: str = Field(description="The invoice number as printed.")
    issued_on: date
    currency: Currency
    seller: Party
    buyer: Party | None = None
    items: list[LineItem] = Field(min_length=1)
    notes: str | None = None


class TicketLabel(BaseModel):
    """A support ticket classification."""

    category: Literal["billing", "bug", "feature_request", "account", "other"]
    urgent: bool
    confidence: float = Field(ge=0, le=1)


class Finding(BaseModel):
    """One conclusion of an analysis, with the evidence for it."""

    claim: str
    evidence: list[str]
    severity: Literal["low", "medium", "high"]


class Analysis(BaseModel):
    """A long-form analysis with findings and a recommendation."""

    summary: str = Field(description="Three to five sentences.")
    findings: list[Finding]
    recommendation: str
    open_questions: list[str] = Field(default_factory=list)
