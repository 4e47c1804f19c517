from nfvcat.validation.rules.base import Rule


class PageSizeNotOffered(Rule):
    id = "E2005"
    shortdesc = "Memory page size no host of the site offers"
    description = ("`hw:mem_page_size` given as a size (`3MB`, `2048`) passes Nova's API validation, but "
                   "the scheduler's NUMA topology filter only places the instance on a host with pages of "
                   "exactly that size: an x86_64 host has 4 KiB, 2 MiB and 1 GiB pages, so `3MB` fits no "
                   "host and every boot ends in 'No valid host'. The size is read as Nova reads it; the "
                   "site's page sizes come from the site profile's `page_sizes` (x86_64's when absent). "
                   "`small`, `large` and `any` are not checked.")
    source_url = "https://docs.openstack.org/nova/latest/admin/huge-pages.html"
    engine = "nova"
