"""Model APIs behind one small interface; a scripted provider as a test double.

Public names: :class:`Provider` and :func:`default_registry` (``base``), the request and
response types (``types``), :class:`ProviderConfig` / :func:`parse_providers` (``config``),
:class:`PriceTable` (``pricing``), :class:`RetryPolicy` (``retry``), the error classes
(``errors``) and :class:`ScriptedProvider` (``scripted``). The vendor SDKs are imported only
when a provider of that kind is built.
"""
