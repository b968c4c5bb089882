"""The validating admission webhook's machinery: its certificate, its configuration, its server.

The decisions it serves are the reconcilers' own (ebb_operator.access), in handlers/admission.py.
"""
