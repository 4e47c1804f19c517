"""VNF packages: ``csar`` builds the ETSI SOL004 CSAR of a vnfd entry, ``basehot`` generates its BaseHOT from
the catalog's HOT template."""
