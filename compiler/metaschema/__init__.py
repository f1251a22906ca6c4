"""A fast check of JSON Schema documents against the draft 2020-12 meta-schema.

Standard library only; jsonschema stays the authority on anything it cannot vouch for.
"""
