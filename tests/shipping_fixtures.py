"""A small shipping page with two sections, shared by the refusal and dense-gate tests."""

SHIPPING_MD = (
    "# Shipping\n\n## Delivery times\n\nParcels to France take four days by road. "
    "Parcels to Canada take twelve days by sea.\n\n## Packing\n\n"
    "Every parcel is packed in recycled cardboard.\n")
