package dev.sidestream.testing.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

import java.util.List;

import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * Stands in for the build step of Apicurio's config-index Quarkus extension,
 * whose deployment artifact is not on Maven Central: that step lists the
 * properties an administrator may change at run time through the registry's
 * admin API. The tests never change configuration at run time, so the list is
 * empty and every property keeps the value it was started with.
 */
public class DynamicConfigIndex {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
