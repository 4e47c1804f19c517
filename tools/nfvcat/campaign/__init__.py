"""Test campaigns against any cloud (``nfvcat test``): the Test Description File's tests run step by step
(``runner``: validate, plan, onboard, instantiate, check, terminate through ``controlplane``), the RFC 2544
search (``rfc2544``), the records and reports (``results``, ``reports``). Where a data plane runs is a plugin
(``targets``); ``nfvcat-testbeds`` installs the namespace lab and the dev cloud's."""
